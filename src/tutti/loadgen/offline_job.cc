#include "tutti/loadgen/offline_job.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"

namespace tutti {

absl::StatusOr<ModelLoadReading> ParseModelLoad(const std::string& stats_json, Time at) {
  rapidjson::Document d;
  d.Parse(stats_json.c_str());
  if (d.HasParseError() || !d.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat("model statistics are not a JSON object: ", stats_json));
  }
  // Triton's shape, {"model_stats": [{…, "tutti": {…}}]}: Tutti's figures of its one model.
  const rapidjson::Value* v = &d;
  if (d.HasMember("model_stats") && d["model_stats"].IsArray() && d["model_stats"].Size() == 1 &&
      d["model_stats"][0].IsObject() && d["model_stats"][0].HasMember("tutti") &&
      d["model_stats"][0]["tutti"].IsObject()) {
    v = &d["model_stats"][0]["tutti"];
  }
  ModelLoadReading r{at, 0, 0};
  for (const char* key : {"success", "late", "dropped", "error", "rejected", "overloaded"}) {
    if (!v->HasMember(key) || !(*v)[key].IsInt64()) {
      return absl::InvalidArgumentError(absl::StrCat("model statistics without '", key, "': ", stats_json));
    }
    r.ended += (*v)[key].GetInt64();
  }
  if (!v->HasMember("peak_rps") || !(*v)["peak_rps"].IsNumber()) {
    return absl::InvalidArgumentError(absl::StrCat("model statistics without 'peak_rps': ", stats_json));
  }
  r.peak_rps = (*v)["peak_rps"].GetDouble();
  return r;
}

double OnlineLoad(const ModelLoadReading& before, const ModelLoadReading& now, int64_t own_ended) {
  const double seconds = ToSeconds(now.at - before.at);
  if (seconds <= 0 || now.peak_rps <= 0) return 0;
  const int64_t online = std::max<int64_t>(0, now.ended - before.ended - own_ended);
  return static_cast<double>(online) / seconds / now.peak_rps;
}

namespace {

// What may succeed when sent again: the server refused it (queue full,
// unloading, shutting down) or dropped it (its objective could not be met).
bool Retryable(const std::string& error) {
  return error == "HTTP 503" || error == "gRPC UNAVAILABLE" || error == "gRPC RESOURCE_EXHAUSTED" ||
         error == "gRPC DEADLINE_EXCEEDED";
}

}  // namespace

absl::StatusOr<std::vector<OfflineAnswer>> RunOfflineJob(int64_t total, const OfflineJobIo& io,
                                                         const OfflineJobOptions& options) {
  absl::StatusOr<ModelLoadReading> before = io.read_load();
  if (!before.ok()) return before.status();
  if (before->peak_rps <= 0 && options.pause_above > 0) {
    return absl::FailedPreconditionError(absl::StrCat("the server does not know the peak throughput of model '",
                                                      io.target.name, "', so the online load cannot be told; run "
                                                      "with --pause-above 0 to never pause"));
  }
  std::vector<OfflineAnswer> answers(total);
  std::mutex mu;
  std::vector<int64_t> retry;  // items to send again
  int64_t next = 0, in_flight = 0, ended = 0, failed = 0, own_ended = 0;
  bool running = true;
  // Sends items while the gate is open and room is left. Called with `mu`
  // held; releases it around each send (the transport may answer at once).
  std::function<void(std::unique_lock<std::mutex>&)> top_up = [&](std::unique_lock<std::mutex>& lock) {
    while (running && in_flight < options.in_flight && (!retry.empty() || next < total)) {
      int64_t i;
      if (!retry.empty()) {
        i = retry.back();
        retry.pop_back();
      } else {
        i = next++;
      }
      ++in_flight;
      ++answers[i].attempts;
      lock.unlock();
      const std::vector<float> data = io.input(i);
      io.transport->Infer(io.target, data, {.objective_ms = options.objective_ms}, [&, i](LoadAnswer a) {
        std::unique_lock<std::mutex> l(mu);
        --in_flight;
        ++own_ended;
        OfflineAnswer& out = answers[i];
        if (!a.error.empty() && Retryable(a.error) && out.attempts < options.attempts) {
          retry.push_back(i);
        } else {
          out.error = std::move(a.error);
          out.output = std::move(a.output);
          if (!out.error.empty()) ++failed;
          ++ended;
        }
        top_up(l);
      });
      lock.lock();
    }
  };
  OfflineProgress progress{.total = total};
  std::unique_lock<std::mutex> lock(mu);
  while (ended < total) {  // the first send waits for the first poll's load
    lock.unlock();
    io.wait();
    absl::StatusOr<ModelLoadReading> now = io.read_load();
    lock.lock();
    if (now.ok()) {  // an unreadable poll keeps the gate as it was
      progress.online_load = OnlineLoad(*before, *now, own_ended);
      const bool was_running = running;
      running = options.pause_above <= 0 || progress.online_load <= options.pause_above;
      if (!running) progress.paused_time += now->at - before->at;
      if (was_running && !running) ++progress.pauses;
      own_ended = 0;
      before = now;
    }
    progress.answered = ended - failed;
    progress.failed = failed;
    progress.paused = !running;
    if (io.progress) io.progress(progress);
    top_up(lock);
  }
  return answers;  // every item ended: nothing is in flight
}

}  // namespace tutti
