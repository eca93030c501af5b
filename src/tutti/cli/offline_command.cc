// tutti offline: a batch job on a running server's spare capacity (INFaaS's
// offline requests; loadgen/offline_job.h).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/cli/command_util.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/frontend/access.h"
#include "tutti/loadgen/http_client_pool.h"
#include "tutti/loadgen/offline_job.h"

namespace tutti::cli {
namespace {

// The images of an IDX file (gzip or not) as FP32 rows in [0, 1].
struct Images {
  int64_t count = 0, size = 0;
  std::vector<float> pixels;
};

absl::StatusOr<Images> ReadImages(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadMaybeGzipped(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<IdxArray> idx = ParseIdx(*bytes);
  if (!idx.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", idx.status().message()));
  if (idx->dims.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": an IDX file of images has 2 or more dimensions"));
  }
  Images out;
  out.count = idx->dims[0];
  out.size = out.count > 0 ? static_cast<int64_t>(idx->data.size()) / out.count : 0;
  out.pixels.reserve(idx->data.size());
  for (uint8_t v : idx->data) out.pixels.push_back(v / 255.0f);
  return out;
}

}  // namespace

int OfflineCommand(const Args& args) {
  std::string host = "127.0.0.1", model, input, output, token_file;
  int port = 8000;
  double poll_ms = 500;
  OfflineJobOptions options;
  FlagSet flags("tutti offline --model M --input IMAGES --output CSV [flags]",
                "Runs a batch job on a running server's spare capacity (INFaaS's offline requests): every\n"
                "image of an IDX file (Fashion-MNIST's format, gzip or not) is sent to --model over KServe v2\n"
                "HTTP, and its answer written to --output as a CSV row: index, status (ok or the error),\n"
                "predicted class (the largest output), outputs. The job sends only while the model's online\n"
                "load — the requests others send it, over its peak throughput (its stats' peak_rps) — is at\n"
                "or below --pause-above, and pauses while it is above. Requests the server refuses or drops\n"
                "are sent again. Progress once a second on stderr. Exit code 1 if any item failed.");
  flags.String("host", &host, "server host");
  flags.Int("port", &port, "the server's HTTP port");
  flags.String("model", &model, "the model to run");
  flags.String("input", &input, "IDX file of images, e.g. /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
  flags.String("output", &output, "CSV file to write");
  flags.Double("pause-above", &options.pause_above, "pause while the online load is above this (0: never pause)");
  flags.Int("in-flight", &options.in_flight, "most of the job's requests at the server at once");
  flags.Double("objective-ms", &options.objective_ms, "latency objective sent with each request");
  flags.Int("attempts", &options.attempts, "sends of an item the server refuses or drops, at most");
  flags.Double("poll-ms", &poll_ms, "how often the online load is read");
  flags.String("token-file", &token_file,
               "send the first token of this file as Authorization: Bearer (the model's stats need an admin "
               "token where admin tokens are configured)");
  if (int rc = ParseOrExit(flags, args, {"model", "input", "output"}); rc >= 0) return rc;
  if (options.in_flight < 1 || options.attempts < 1 || poll_ms <= 0 || options.pause_above < 0) {
    return Fail(absl::InvalidArgumentError("--in-flight and --attempts must be >= 1, --poll-ms > 0, "
                                           "--pause-above >= 0"));
  }
  std::string token;
  if (!token_file.empty()) {
    absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(token_file);
    if (!tokens.ok()) return Fail(tokens.status());
    token = tokens->front();
  }
  absl::StatusOr<Images> images = ReadImages(input);
  if (!images.ok()) return Fail(images.status());
  std::ofstream out(output);
  if (!out) return Fail(absl::InvalidArgumentError(absl::StrCat("--output: cannot write ", output)));

  std::unique_ptr<LoadTransport> transport = MakeHttpTransport(host, port, options.in_flight, /*binary=*/true, token);
  absl::StatusOr<LoadTarget> target = transport->Describe(model);
  if (!target.ok()) return Fail(target.status());
  if (target->input_elements != images->size) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat("model '%s' takes %d values per item; %s has %d per image",
                                                           model, target->input_elements, input, images->size)));
  }
  HttpClientPool stats(host, port, 1);
  std::vector<std::pair<std::string, std::string>> auth;
  if (!token.empty()) auth = {{"Authorization", "Bearer " + token}};
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  };
  OfflineJobIo io;
  io.transport = transport.get();
  io.target = *target;
  io.input = [&](int64_t i) {
    const float* p = images->pixels.data() + i * images->size;
    return std::vector<float>(p, p + images->size);
  };
  io.read_load = [&]() -> absl::StatusOr<ModelLoadReading> {
    ClientResponse r = stats.Call({"GET", absl::StrCat("/v2/models/", model, "/stats"), "", auth});
    if (!r.transport.ok()) return r.transport;
    if (r.status != 200) return absl::UnavailableError(absl::StrCat("GET stats: HTTP ", r.status, ": ", r.body));
    return ParseModelLoad(r.body, since_start());
  };
  io.wait = [&] { std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(poll_ms * 1000))); };
  int64_t last_print = -1;
  OfflineProgress last;
  io.progress = [&](const OfflineProgress& p) {
    last = p;
    const int64_t second = since_start() / kSecond;
    if (second == last_print) return;
    last_print = second;
    std::cerr << absl::StrFormat("offline: %d / %d done (%.0f%%), %d failed; online load %.2f: %s\n",
                                 p.answered + p.failed, p.total, 100.0 * (p.answered + p.failed) / p.total, p.failed,
                                 p.online_load, p.paused ? "paused" : "running");
  };
  std::cerr << absl::StrFormat("offline: %d images of %s to model '%s' at %s:%d, pausing above online load %.2f\n",
                               images->count, input, model, host, port, options.pause_above);
  absl::StatusOr<std::vector<OfflineAnswer>> answers = RunOfflineJob(images->count, io, options);
  if (!answers.ok()) return Fail(answers.status());
  int64_t failed = 0;
  out << "index,status,class";
  const size_t outputs = answers->empty() ? 0 : std::max_element(answers->begin(), answers->end(), [](auto& a, auto& b) {
                                                  return a.output.size() < b.output.size();
                                                })->output.size();
  for (size_t j = 0; j < outputs; ++j) out << ",output_" << j;
  out << "\n";
  for (size_t i = 0; i < answers->size(); ++i) {
    const OfflineAnswer& a = (*answers)[i];
    if (!a.error.empty()) {
      ++failed;
      out << i << ",\"" << a.error << "\",\n";
      continue;
    }
    out << i << ",ok," << std::max_element(a.output.begin(), a.output.end()) - a.output.begin();
    for (float v : a.output) out << "," << v;
    out << "\n";
  }
  out.close();
  const double seconds = since_start() / 1e9;
  std::cout << absl::StrFormat(
      "offline: %d answered, %d failed in %.1f s (%.0f images/s), paused %d times for %.1f s in all -> %s\n",
      answers->size() - failed, failed, seconds, answers->size() / seconds, last.pauses, ToSeconds(last.paused_time),
      output);
  return failed > 0 ? 1 : 0;
}

}  // namespace tutti::cli
