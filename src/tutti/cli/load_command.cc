// tutti load: the open-loop load generator.
#include <algorithm>
#include <iostream>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/command_util.h"
#include "tutti/console/console_assets.h"
#include "tutti/frontend/access.h"
#include "tutti/loadgen/load_generator.h"

namespace tutti::cli {
namespace {

// "0:100,10:500" → rate 100 from t = 0 s, 500 from t = 10 s.
absl::Status ParseSchedule(const std::string& text, WorkloadSpec* w) {
  bool first = true;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits(':', 1));
    double at = 0, rate = 0;
    if (!absl::SimpleAtod(kv.first, &at) || !absl::SimpleAtod(kv.second, &rate) || at < 0 || rate < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--schedule: '", part, "' is not AT_S:RATE"));
    }
    if (first && at == 0) {
      w->rate = rate;
    } else {
      w->phases.push_back({Seconds(at), rate});
    }
    first = false;
  }
  return absl::OkStatus();
}

}  // namespace

int LoadCommand(const Args& args) {
  LoadSpec spec;
  std::string models, arrival = "poisson", schedule, csv, timeline_csv, protocol = "http", html, priorities;
  double rate = 100, duration_s = 10, warmup_s = 1, slo_ms = 100, gamma_shape = 1, zipf = 0, tolerance = 0.02;
  int64_t seed = 1;
  bool json = false, find_goodput = false;
  FlagSet flags("tutti load --models A,B [flags]",
                "Sends open-loop KServe v2 inference requests (HTTP or gRPC) to a running server\n"
                "(`tutti serve`) and reports throughput, goodput (answers within the SLO), latency\n"
                "quantiles, bad rate and — for Fashion-MNIST models — the accuracy of the answers against\n"
                "the test labels. Errors and missing answers count as infinitely late.\n"
                "--find-goodput searches the highest rate whose p99 meets the SLO for every model.");
  flags.String("host", &spec.host, "server host");
  flags.Int("port", &spec.port, "server port (the HTTP or the gRPC one, after --protocol)");
  flags.String("protocol", &protocol, "http (KServe v2 REST, keep-alive) | grpc (inference.GRPCInferenceService)");
  flags.String("models", &models,
               "comma-separated model names (requests split by --zipf popularity); task:TASK[@ACCURACY] sends "
               "model-less requests (INFaaS) for TASK asking that accuracy (http), and reports which variants "
               "served them and whether their accuracy met it");
  flags.Double("rate", &rate, "total requests/s (the search's starting rate with --find-goodput)");
  flags.String("arrival", &arrival, "arrival process: constant | poisson | gamma");
  flags.Double("gamma-shape", &gamma_shape, "gamma shape k (CV = 1/sqrt(k))");
  flags.String("schedule", &schedule, "rate schedule AT_S:RATE,… (overrides --rate), e.g. 0:100,10:500");
  flags.Double("zipf", &zipf, "Zipf exponent of model popularity (0: equal shares)");
  flags.Double("duration-s", &duration_s, "sending time per run, warm-up included");
  flags.Double("warmup-s", &warmup_s, "leading seconds not measured");
  flags.Double("slo-ms", &slo_ms, "latency objective sent with every request and judged");
  flags.String("priorities", &priorities,
               "shares of the requests sent at Triton's priority 1 (the highest), 2, …, e.g. 0.5,0.5 (each "
               "request draws one; results are also reported per priority). The models need "
               "dynamic_batching.priority_levels");
  flags.Double("timeout-share", &spec.timeout_share,
               "send Triton's timeout parameter at this share of --slo-ms (a client that gives up then; "
               "0: none)");
  flags.Int("connections", &spec.connections, "most keep-alive connections (http)");
  flags.Bool("json", &json, "send JSON tensors instead of the binary tensor extension (http)");
  flags.Bool("kernel-timestamps", &spec.kernel_timestamps,
             "an answer's latency ends at the kernel's receive timestamp, leaving out this client's own wait "
             "for a core (http; false: when the client has read it)");
  std::string token_file;
  flags.String("token-file", &token_file, "send the first token of this file as Authorization: Bearer (both "
                                          "protocols; see tutti serve --inference-tokens-file)");
  flags.Int64("max-per-model", &spec.max_per_model, "stop each model after this many requests (0: no limit)");
  flags.Int("concurrency", &spec.concurrency,
            "closed loop: keep this many requests in flight per model, each answer sending the next (0: open "
            "loop at --rate)");
  flags.Int64("seed", &seed, "random seed of the arrivals");
  flags.String("data", &spec.data_dir, "Fashion-MNIST directory (default: Debian's)");
  flags.String("csv", &csv, "also write the result as CSV here");
  flags.String("timeline-csv", &timeline_csv,
               "also write, per 100 ms of sending, the requests sent and how many were bad (late or failed) as "
               "CSV here (unix_s,sent,bad), to line up with events outside the run");
  flags.String("html", &html,
               "also write a self-contained HTML report here (with --find-goodput: every probe's goodput and p99)");
  flags.Bool("find-goodput", &find_goodput, "search the highest rate meeting p99 <= SLO");
  flags.Double("tolerance", &tolerance, "relative precision of the goodput search");
  if (int rc = ParseOrExit(flags, args, {"models"}); rc >= 0) return rc;
  if (!token_file.empty()) {
    absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(token_file);
    if (!tokens.ok()) return Fail(tokens.status());
    spec.token = tokens->front();
  }

  spec.models = absl::StrSplit(models, ',', absl::SkipEmpty());
  spec.workload.rate = rate;
  spec.workload.zipf_s = zipf;
  spec.workload.gamma_shape = gamma_shape;
  if (arrival == "constant") {
    spec.workload.arrival = ArrivalKind::kConstant;
  } else if (arrival == "poisson") {
    spec.workload.arrival = ArrivalKind::kPoisson;
  } else if (arrival == "gamma") {
    spec.workload.arrival = ArrivalKind::kGamma;
  } else {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--arrival: unknown process '", arrival,
                                                        "' (expected constant, poisson or gamma)")));
  }
  if (!schedule.empty()) {
    if (absl::Status s = ParseSchedule(schedule, &spec.workload); !s.ok()) return Fail(s);
  }
  if (!(slo_ms > 0)) return Fail(absl::InvalidArgumentError("--slo-ms must be positive"));
  if (!(spec.timeout_share >= 0)) return Fail(absl::InvalidArgumentError("--timeout-share must not be negative"));
  for (absl::string_view share : absl::StrSplit(priorities, ',', absl::SkipEmpty())) {
    double x = 0;
    if (!absl::SimpleAtod(share, &x) || !(x >= 0)) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("--priorities: '", share, "' is not a share (a non-negative number), in ", priorities)));
    }
    spec.workload.priority_shares.push_back(x);
  }
  if (!spec.workload.priority_shares.empty() &&
      std::all_of(spec.workload.priority_shares.begin(), spec.workload.priority_shares.end(),
                  [](double x) { return x == 0; })) {
    return Fail(absl::InvalidArgumentError("--priorities: the shares must not all be 0"));
  }
  if (spec.concurrency < 0) return Fail(absl::InvalidArgumentError("--concurrency must not be negative"));
  if (spec.concurrency > 0 && find_goodput) {
    return Fail(absl::InvalidArgumentError("--find-goodput searches open-loop rates; drop --concurrency"));
  }
  spec.duration = Seconds(duration_s);
  spec.warmup = Seconds(warmup_s);
  spec.slo = Millis(slo_ms);
  spec.seed = static_cast<uint64_t>(seed);
  spec.binary = !json;
  if (protocol == "grpc") {
    spec.protocol = LoadProtocol::kGrpc;
  } else if (protocol != "http") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--protocol: unknown '", protocol, "' (expected http or grpc)")));
  }

  LoadResult result;
  std::optional<LoadGoodput> search;
  if (find_goodput) {
    std::cerr << absl::StrFormat("searching the goodput of %s at %s:%d (SLO %.1f ms, %.0f s per probe)…\n",
                                 models, spec.host, spec.port, slo_ms, duration_s);
    absl::StatusOr<LoadGoodput> g = FindLoadGoodput(spec, tolerance, &std::cerr);
    if (!g.ok()) return Fail(g.status());
    std::cout << absl::StrFormat("goodput: %.1f requests/s offered with p99 <= %.1f ms (%d probes)\n", g->rate,
                                 slo_ms, g->probes);
    result = g->at_rate;
    search = *std::move(g);
  } else {
    if (spec.concurrency > 0) {
      std::cerr << absl::StrFormat("keeping %d request(s) in flight per model to %s at %s:%d for %.0f s…\n",
                                   spec.concurrency, models, spec.host, spec.port, duration_s);
    } else {
      std::cerr << absl::StrFormat("sending %.0f requests/s (%s) to %s at %s:%d for %.0f s…\n", spec.workload.rate,
                                   arrival, models, spec.host, spec.port, duration_s);
    }
    absl::StatusOr<LoadResult> r = RunLoad(spec);
    if (!r.ok()) return Fail(r.status());
    result = *std::move(r);
  }
  PrintLoadResult(result, std::cout);
  if (!csv.empty()) {
    if (absl::Status s = WriteLoadCsv(result, csv); !s.ok()) return Fail(s);
  }
  if (!timeline_csv.empty()) {
    if (absl::Status s = WriteLoadTimelineCsv(result, timeline_csv); !s.ok()) return Fail(s);
  }
  if (!html.empty()) {
    const std::string subtitle =
        absl::StrFormat("%s at %s:%d, SLO %.1f ms, %s", models, spec.host, spec.port, slo_ms,
                        search ? absl::StrFormat("goodput search (%.0f s per probe)", duration_s)
                               : absl::StrFormat("%.0f r/s for %.0f s", spec.workload.rate, duration_s));
    if (absl::Status s = WriteReport(html, "Tutti load test", subtitle, "load",
                                     LoadReportJson(result, spec.slo, search ? &*search : nullptr));
        !s.ok()) {
      return Fail(s);
    }
    std::cerr << "wrote " << html << "\n";
  }
  return 0;
}

}  // namespace tutti::cli
