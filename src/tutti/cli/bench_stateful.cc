// tutti bench stateful: HAMS's replication modes (experiments/stateful_serving.h).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/models/torch_model.h"
#include "tutti/experiments/stateful_serving.h"

namespace tutti::cli {

// A hand-off this slow counts in the ">100us %" column (one of
// DelayHistogram's bounds).
constexpr Duration kSlowHandOff = 100 * kMicrosecond;

int BenchStateful(const Args& args) {
  std::string repo_dir = kDefaultRepo, data_dir = kDefaultFashionMnistDir, modes = "none,remus,nspb";
  double duration_s = 5, kill_at_s = 0, hang_at_s = 0, detect_ms = 500, objective_ms = 100, link_us = 0, think_us = 0,
         planned_dispatch_us = 0, turn_ms = 0, accelerator_us = 0;
  int threads = 1;
  bool side_by_side = false;
  StatefulServingSetup setup;
  setup.policy = "eager";  // deferred holds each request near its deadline: latency would be the objective
  FlagSet flags("tutti bench stateful [--repo DIR] [--modes none,remus,nspb] [flags]",
                "Stateful serving (HAMS) on this CPU: the stateful model --model (the demo's gru_rows,\n"
                "which reads an image 4 rows per request of a sequence) on one torch executor whose\n"
                "states a backup replicates, for each replication mode of --modes: none, nspb (HAMS's\n"
                "non-stop primary-backup), remus (stop-and-buffer), checkpoint (checkpoint-replay).\n"
                "Requests go straight to the serving engine in this process (no HTTP, no client):\n"
                "--sequences clients, each classifying test images one after another, sending a\n"
                "step when the last is answered. Prints throughput, latency, the images' accuracy,\n"
                "and what the replication cost (proxy us/bat: the proxies' time per stateful batch,\n"
                "on every thread; release us: from the primary's answer to the batch's release, its\n"
                "update stage and any wait for the backup; queued %: the stateful batches whose hand-off\n"
                "found the slot's lock held through its spin, taken in by the lock's holder; >100us %: the\n"
                "batches, of every step, whose hand-off to their executor took over 100 us: the tail the\n"
                "measured plan is taken from (at 0.1%, its p99.9 is 100 us); plan us: the dispatch delay\n"
                "the scheduler planned each batch's start with, its mean over the run).\n"
                "With --kill-at-s, the primary dies then (what it held is lost) and the backup takes\n"
                "over: prints the failover time, the batches run again, the answers that read a state\n"
                "not descended from the previous answer's (inconsistent), and checks that every\n"
                "request was answered exactly once. With\n"
                "--hang-at-s, the primary stops answering instead, unannounced: the failure detector\n"
                "(a batch overdue by --detect-ms) finds it; prints how long that took too. With\n"
                "--side-by-side, the modes run at the same time instead of one after another, each\n"
                "with executors, backup and clients of its own: they share the machine's every\n"
                "moment, so their difference does not depend on when each ran (`--modes none,none`\n"
                "shows what the method reads when there is nothing to find). With --turn-ms too, they\n"
                "take turns instead: each mode's clients start images only in its turns of that\n"
                "length, so each serves nearly alone, yet all sample the whole run's drift.");
  flags.String("repo", &repo_dir, "model repository");
  flags.String("model", &setup.model, "the stateful model, or a graph with stateful steps (the demo's gru_pipeline)");
  flags.String("modes", &modes, "replication modes to compare");
  flags.Int("sequences", &setup.sequences, "concurrent clients");
  flags.Double("duration-s", &duration_s, "seconds of load per mode");
  flags.Double("kill-at-s", &kill_at_s, "kill the primary this many seconds in (0: never)");
  flags.Double("hang-at-s", &hang_at_s, "the primary stops answering this many seconds in, unannounced (0: never)");
  flags.Double("detect-ms", &detect_ms, "the failure detector's limit: a batch overdue this long means the primary died");
  flags.Double("think-us", &think_us, "a client's mean pause between an answer and its next request (exponential; 0: none)");
  flags.Double("link-us", &link_us, "the backup's link: a message is delivered this long after it is sent (0: shared memory)");
  flags.Double("planned-dispatch-us", &planned_dispatch_us,
               "plan every batch's dispatch at this delay, not at the measured tail (0: measured)");
  flags.Int("checkpoint-every", &setup.replication.checkpoint_every, "checkpoint mode: stateful batches between checkpoints");
  flags.Bool("nondeterminism", &setup.nondeterminism, "sum the model's recurrent products in a random order");
  flags.Double("slo-ms", &objective_ms, "latency objective of every request");
  flags.String("policy", &setup.policy, "scheduling policy: deferred | adaptive | eager | timeout | nexus");
  flags.Int("max-batches-in-flight", &setup.max_in_flight,
            "an executor takes a new batch only while it holds fewer not done (0: no limit)");
  flags.Int("threads", &threads, "libtorch intra-op threads");
  flags.Bool("side-by-side", &side_by_side, "run the modes at the same time, each with clients of its own");
  flags.Double("turn-ms", &turn_ms, "with --side-by-side: the modes take turns this long each (0: all at once)");
  flags.Double("accelerator-us", &accelerator_us,
               "the stateful steps' batches take at least this long, as on an accelerator (emulated time over the "
               "real model's outputs; the scheduler plans with it; 0: the CPU's own time)");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  SetTorchThreads(threads);
  setup.duration = static_cast<Duration>(duration_s * kSecond);
  setup.kill_at = static_cast<Duration>(kill_at_s * kSecond);
  setup.hang_at = static_cast<Duration>(hang_at_s * kSecond);
  setup.replication.detect_after = Millis(detect_ms);
  setup.replication.link_rtt = static_cast<Duration>(link_us * kMicrosecond);
  setup.think = static_cast<Duration>(think_us * kMicrosecond);
  setup.planned_dispatch = static_cast<Duration>(planned_dispatch_us * kMicrosecond);
  if (turn_ms < 0 || (turn_ms > 0 && !side_by_side)) {
    return Fail(absl::InvalidArgumentError("--turn-ms: a length > 0 with --side-by-side (0: all at once)"));
  }
  setup.turn = Millis(turn_ms);
  if (accelerator_us < 0) return Fail(absl::InvalidArgumentError("--accelerator-us: a time >= 0"));
  setup.accelerator = static_cast<Duration>(accelerator_us * kMicrosecond);
  const bool fault = setup.kill_at > 0 || setup.hang_at > 0;
  setup.objective = Millis(objective_ms);
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<ImageSet> test = LoadFashionMnist(data_dir, Split::kTest);
  if (!test.ok()) return Fail(test.status());
  std::cout << absl::StrFormat("%-10s %9s %8s %8s %8s %7s %10s %11s %8s %8s %10s", "mode", "req/s", "p50 ms",
                               "p99 ms", "errors", "acc", "state KB/s", "proxy us/bat", "held %", "hold us",
                               "release us");
  if (fault) {
    std::cout << absl::StrFormat(" %11s %6s %14s %6s %12s", "failover ms", "rerun", "inconsistent", "once",
                                 "detection ms");
  }
  std::cout << absl::StrFormat(" %8s %8s %8s\n", "queued %", ">100us %", "plan us");
  std::vector<std::string> names = absl::StrSplit(modes, ',', absl::SkipEmpty());
  std::vector<ReplicationMode> parsed;
  for (const std::string& name : names) {
    absl::StatusOr<ReplicationMode> mode = ParseReplicationMode(name);
    if (!mode.ok()) return Fail(mode.status());
    parsed.push_back(*mode);
  }
  auto print = [fault](const std::string& name, const StatefulServingResult& r) {
    const ReplicationStats& st = r.replication;
    const double seconds = static_cast<double>(r.answers) / std::max(1e-9, r.throughput);
    auto per_batch_us = [](Duration total, int64_t batches) {
      return batches == 0 ? 0.0 : ToMillis(total) * 1000 / static_cast<double>(batches);
    };
    auto percent = [](int64_t part, int64_t whole) {
      return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
    };
    std::cout << absl::StrFormat(
        "%-10s %9.0f %8.4f %8.3f %8d %7.4f %10.1f %11.2f %8.1f %8.1f %10.2f", name, r.throughput, r.p50_ms, r.p99_ms,
        r.errors, r.accuracy, (st.state_bytes + st.log_bytes) / 1024.0 / std::max(1e-9, seconds),
        per_batch_us(st.proxy_time, st.stateful_batches),
        percent(st.held_batches, st.stateful_batches),
        per_batch_us(st.held_time, st.held_batches), per_batch_us(st.release_time, st.stateful_batches));
    if (fault) {
      const bool once = r.duplicates == 0 && r.answers == r.requests;
      std::cout << absl::StrFormat(" %11.2f %6d %7d/%-6d %6s %12.1f", ToMillis(st.failover_time), st.rerun_batches,
                                   st.inconsistent, st.audited, once ? "yes" : "NO", ToMillis(st.detection_time));
    }
    std::cout << absl::StrFormat(" %8.3f %8.3f %8.1f\n", percent(st.queued_batches, st.stateful_batches),
                                 percent(r.dispatch.Over(kSlowHandOff), r.dispatch.count()), r.planned_dispatch_us);
    std::cout.flush();
    if (r.errors > 0) std::cerr << name << ": the first error: " << r.first_error << "\n";
  };
  // One measurement per mode, each printed when done; or one for them all.
  for (size_t m = 0; m < parsed.size(); m += side_by_side ? parsed.size() : 1) {
    absl::StatusOr<std::vector<StatefulServingResult>> r = MeasureStatefulServing(
        *repo, setup, side_by_side ? parsed : std::vector<ReplicationMode>{parsed[m]}, *test);
    if (!r.ok()) return Fail(r.status());
    for (size_t i = 0; i < r->size(); ++i) print(names[m + i], (*r)[i]);
  }
  return 0;
}

}  // namespace tutti::cli
