// The load generator behind `tutti load`: open-loop arrivals (the
// simulator's workload generator: constant, Poisson or Gamma; a fixed rate
// or phases; Zipf popularity across models) sent as KServe v2 requests
// over keep-alive HTTP connections or over gRPC. Models whose input is one 28×28 image
// get real Fashion-MNIST test images, and their answers are checked against
// the labels; other models get zeros of their input size.
//
// Open loop: a request is sent at its arrival time whether or not earlier
// ones were answered (or, with LoadSpec::concurrency, closed loop). Latency runs from that send to the response; how far
// the sender fell behind its schedule is reported separately (send lag), so
// an overloaded generator cannot hide as a fast server.
#ifndef TUTTI_LOADGEN_LOAD_GENERATOR_H_
#define TUTTI_LOADGEN_LOAD_GENERATOR_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/loadgen/load_transport.h"
#include "tutti/workload/metrics.h"
#include "tutti/workload/workload.h"

namespace tutti {

struct LoadSpec {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::vector<std::string> models;       // served model names; each gets a stream
  WorkloadSpec workload;                 // arrivals; workload.rate is the total rate
  Duration duration = 10 * kSecond;      // sending time, warm-up included
  Duration warmup = kSecond;             // requests sent before this are not measured
  uint64_t seed = 1;
  Duration slo = 100 * kMillisecond;     // sent as latency_objective_ms; p99 is judged against it
  // Sent as Triton's `timeout` parameter: this share of the SLO (a client
  // that gives up then; the server withdraws the request if still queued,
  // answered as an error). 0: none.
  double timeout_share = 0;
  // Most keep-alive connections open at once. HTTP/1.1 carries one request
  // at a time per connection, so this must exceed rate × latency (Little's
  // law): 20k r/s answered in 20 ms need 400.
  int connections = 1024;
  LoadProtocol protocol = LoadProtocol::kHttp;
  bool binary = true;                    // HTTP: binary tensor extension (else JSON data)
  // HTTP: an answer's latency ends when it reached this host (the kernel's
  // receive timestamp), so that the client's own wait for a core — it may
  // share the server's — is not counted; else when the client has read it.
  bool kernel_timestamps = true;
  std::string token;                     // sent as "Authorization: Bearer <token>" ("" : none)
  int64_t max_per_model = 0;             // stop a model's stream after this many (0: no limit)
  // Closed loop (perf_analyzer's concurrency mode): keep this many requests
  // in flight per model, each answer sending the next; the workload's
  // arrivals are unused. 0: open loop.
  int concurrency = 0;
  std::string data_dir;                  // Fashion-MNIST; "" for the default
  Duration drain_timeout = 30 * kSecond; // wait this long for the last answers
};

// Who was late: a late answer that says how long the server held the
// request (tutti_server_us) was late by the server when that alone passed
// the SLO, else by what lies outside it — the network and this client.
struct LoadModelResult {
  ModelMetrics metrics;                  // good / late / error (failed, refused or no answer), latency
  std::map<std::string, int64_t> errors; // "HTTP 503", "no answer", … → count
  int64_t emulated = 0;                  // answers marked emulated
  int64_t labelled = 0;                  // real answers checked against a label
  int64_t correct = 0;
  int64_t timed = 0;                     // answers carrying the server's time
  int64_t server_late = 0;               // of those: the server took longer than the SLO
  int64_t client_late = 0;               // late, though the server took no longer than the SLO
  Histogram outside;                     // latency − server time, timed answers
  Histogram server;                      // the server's time (receipt to answer), timed answers
  // A model-less target (LoadTarget::task): the accuracy it asked for (< 0:
  // none) and how many answers each variant gave.
  double asked_accuracy = -1;
  std::map<std::string, int64_t> served_by;

  double Accuracy() const { return labelled ? static_cast<double>(correct) / labelled : 0; }
  void Merge(const LoadModelResult& other);
};

struct LoadResult {
  double rate = 0;                       // offered total rate
  Duration window = 0;                   // measured sending span
  std::vector<LoadModelResult> models;
  // With workload.priority_shares: every model's requests by the priority
  // they were sent at ("priority 1", …).
  std::vector<LoadModelResult> levels;
  LoadModelResult total;
  Duration max_send_lag = 0;             // worst lateness of a send vs its schedule
  Duration p99_send_lag = 0;
  bool kernel_timed = false;             // latencies end at the kernel's receive timestamps
  // Per `timeline_step` of the run by each request's scheduled send
  // (warm-up included): the requests sent then, and how many of them were
  // bad (late or failed). `started_unix` (ns since the epoch) is when the
  // first step began, to line the steps up with events outside the run (a
  // fault injected, healed).
  struct Step {
    int64_t sent = 0, bad = 0;
  };
  std::vector<Step> timeline;
  Duration timeline_step = 100 * kMillisecond;
  int64_t started_unix = 0;

  double Throughput() const;             // answered OK / window
  double Goodput() const;                // answered OK within the SLO / window
  double OfferedRate() const;            // sent / window
};

// Runs one load test against a live server. Errors: a model the server
// does not know, the server unreachable, no Fashion-MNIST data for an image
// model, a bad workload.
absl::StatusOr<LoadResult> RunLoad(const LoadSpec& spec);

// The highest total rate whose every model meets p99 ≤ SLO (errors and
// missing answers count as misses), probing `probe` runs from spec's rate
// (doubling, then bisecting to `rel_tolerance`). `progress` hears each probe.
struct LoadProbe {
  double offered_rps = 0, goodput_rps = 0;
  Duration p99 = 0;  // with drops as infinite: kInfiniteFuture
  double bad_rate = 0;
  bool meets = false;
};
struct LoadGoodput {
  double rate = 0;
  LoadResult at_rate;
  int probes = 0;
  std::vector<LoadProbe> probed;  // in the order made
};
absl::StatusOr<LoadGoodput> FindLoadGoodput(const LoadSpec& spec, double rel_tolerance, std::ostream* progress);

// The data of a load test's HTML report (console/console_assets.h's "load"
// kind): {"slo_ms", "goodput_rps" (null without a search), "probes":
// [{offered_rps, goodput_rps, p99_ms, bad_rate, meets}], "result": {"models":
// [{name, sent_rps, ok_rps, goodput_rps, bad_rate, p50_ms, p90_ms, p99_ms,
// p999_ms}]}} (per model, then the total; latencies null when infinite).
std::string LoadReportJson(const LoadResult& result, Duration slo, const LoadGoodput* search);

// A table (per model and total) and CSV of a result.
void PrintLoadResult(const LoadResult& result, std::ostream& out);
absl::Status WriteLoadCsv(const LoadResult& result, const std::string& path);
// The timeline as CSV: "unix_s,sent,bad", a line per step.
absl::Status WriteLoadTimelineCsv(const LoadResult& result, const std::string& path);

}  // namespace tutti

#endif  // TUTTI_LOADGEN_LOAD_GENERATOR_H_
