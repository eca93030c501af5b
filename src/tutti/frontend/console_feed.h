// The live console's data (path /console of every KServe HTTP listener):
// what a frontend and its engine know, sampled once a period and sent to
// every open console page as a server-sent event.
//
// A sample is made once per period whatever the number of pages, on a
// thread of the feed's own that runs only while a page is open: the serving
// path pays nothing but the counters it keeps anyway (one more histogram
// per answered item, and one record per executed batch).
#ifndef TUTTI_FRONTEND_CONSOLE_FEED_H_
#define TUTTI_FRONTEND_CONSOLE_FEED_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/frontend/http_server.h"
#include "tutti/frontend/inference_frontend.h"

namespace tutti {

// What the feed reads at one instant (cumulative counts since the start).
struct ConsoleReading {
  Time at = 0;  // on the engine's clock
  std::vector<InferenceFrontend::ModelSample> models;
  std::vector<Duration> busy;        // per executor (empty: executors elsewhere)
  std::vector<BatchTrace> batches;   // finished since the previous reading
  DelayReport delays;
  std::vector<Tracer::SlowRequest> slowest;  // traced, since the previous reading
};

// What the sample is about: the served models (names, objectives) and a
// JSON object of what the process knows of its cluster beyond its engine
// (e.g. the scheduler leader and backends of distributed mode), or "".
struct ConsoleContext {
  std::vector<std::string> model_names;
  std::vector<Duration> objectives;  // per model
  std::string cluster_json;
  std::string trace_link;  // TracerOptions::link
};

// The q-quantile of values counted in buckets (PromHistogram::Buckets over
// `bounds`, +Inf last), interpolated linearly inside its bucket as
// Prometheus's histogram_quantile does; nullopt when nothing was counted.
// A quantile in the +Inf bucket is the last bound.
std::optional<double> BucketQuantile(const std::vector<double>& bounds, const std::vector<int64_t>& buckets,
                                     double q);

// One sample, as the JSON object the console page draws (its fields are
// documented in the README's console section): per model the rates over
// (before.at, now.at] — offered, goodput, late, dropped, rejected (bad
// input or admission control), error — p50/p99 latency and the batch
// sizes of the answered items; per executor its busy fraction over the
// interval and its batches (planned and actual instants in ms before
// now.at); the delays the scheduler plans with; and the cluster: executors
// in use (busy in the interval), bad rate, idle fraction, and Symphony's
// autoscaling advice from them (planner/scaling.h); and the slowest traced
// requests with links to their traces. A pure function.
std::string ConsoleSampleJson(const ConsoleContext& context, const ConsoleReading& before,
                              const ConsoleReading& now);

// Thread-safety: every method may be called from any thread.
class ConsoleFeed {
 public:
  struct Options {
    Duration period = kSecond;
    // What the process knows of its cluster beyond its engine, as a JSON
    // object (ConsoleContext::cluster_json); null: nothing.
    std::function<std::string()> cluster;
  };
  // `frontend` must outlive the feed.
  ConsoleFeed(const InferenceFrontend* frontend, Options options);
  ~ConsoleFeed();  // Stop()

  // Sends every later sample to `stream` as an event ("event: sample",
  // "data: <JSON>") until its Send() fails; the first within a period.
  void Subscribe(std::shared_ptr<HttpStream> stream);
  // Closes every stream and stops sampling. Idempotent.
  void Stop();

 private:
  ConsoleReading Read(Time since) const;
  void Run();

  const InferenceFrontend* const frontend_;
  const Options options_;
  ConsoleContext context_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<HttpStream>> streams_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started by the first Subscribe()
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_CONSOLE_FEED_H_
