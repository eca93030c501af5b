// DelayModel: the delays a scheduler plans with, measured live.
//
// DESIGN.md's second rule: every delay the scheduler plans with is
// measured. Symphony plans each batch with d_ctrl + d_data·b before it and
// d_resp after it, and "always uses the high percentile bound of network
// latency" (Symphony §5.6, appendix D). Tutti measures each one
// where it happens and keeps a high quantile of it over a recent window:
//
//   dispatch   the scheduler's decision → the batch at its executor, ready
//              to run (in process: the hand-off; distributed: the plan's
//              trip through the frontends to the backend, inputs included)
//   response   a batch's end → its answers written to the clients'
//              connections (in process: the answer path; distributed: the
//              outputs' trip to the frontend and its write), one sample
//              per batch: its worst answer against its own deadline's
//              budget (response_tracker.h)
//   timer      how late the scheduler's own timers fire
//   compute    per GPU and model: how long real batches run against the
//              profile's ℓ(b) — the median ratio (a drifting profile) and
//              a high quantile of it (jitter) — and how late they start
//              after they could (the executor's own wake-up)
//
// Executors, transports and the scheduler's clock only report samples
// here; the owner of the scheduler (the serving core, the distributed
// scheduler, the simulator) runs the model on its clock (Start), and every
// `refresh` the model turns the last `window` of samples into a DelayPlan
// by one pure rule (PlanDelays) and hands it to the scheduler. Samples are
// stamped with their instants (WindowedQuantile), so a simulator replaying
// the same delays gets the same plans at the same instants.
//
// The configured delays (a serve config's network_us and
// frontrun_slack_ms) are floors: a measured delay raises them, never
// lowers them. With `measure` off they are the plan, as before.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DELAYS_DELAY_MODEL_H_
#define TUTTI_DELAYS_DELAY_MODEL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "tutti/core/clock.h"
#include "tutti/delays/windowed_quantile.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/delay_plan.h"

namespace tutti {

enum class Delay { kDispatch = 0, kResponse = 1, kTimer = 2 };
inline constexpr int kDelayKinds = 3;
inline constexpr std::array<Delay, kDelayKinds> kAllDelays = {Delay::kDispatch, Delay::kResponse, Delay::kTimer};
// "dispatch", "response", "timer".
absl::string_view DelayName(Delay delay);

struct DelayModelOptions {
  bool measure = true;                    // false: plan with the configured delays only
  // The tail that dispatch, response and compute are planned at: late
  // there means an answer after its deadline.
  double quantile = 0.999;
  // The frontrun slack's quantile of timer lateness. A scheduler decides
  // with the time its timer actually fired, so a timer later than the slack
  // only shrinks its batch; a slack covers every batch's frontrun, so a
  // high quantile would shrink them all.
  double timer_quantile = 0.9;
  Duration window = 10 * kSecond;         // estimates cover at most this much of the recent past
  // ... and only its recent part that holds this many samples, when it holds
  // more: at high rates an estimate follows a change (a burst that ended)
  // within a second or two, at low rates the whole window supplies the
  // samples a high quantile needs. 0: always the whole window.
  int64_t min_samples = 20000;
  Duration refresh = 100 * kMillisecond;  // the plan is remade this often
  // The plan keeps the largest estimate of each delay over this long: it
  // follows a delay up at once and down only after `hold`. A tail estimate
  // jitters from refresh to refresh, and every rise would drop the queued
  // requests that only the lower estimate let through.
  Duration hold = kSecond;
  // The measured part of the plan — dispatch plus response, and the slack —
  // stays within this share of the smallest model objective. Delays are
  // mostly made by load (a burst, a busy CPU); a plan that covered a
  // burst's worst would leave no batch that fits, drop every request, and
  // so never see the delays come down. Past the cap answers are late, which
  // the measured (unplanned) delays in /metrics show.
  double max_share = 0.25;
  // Overload: the plan covers dispatch and response at `quantile`, or at a
  // lower quantile (down to 0.95) when that answers more requests on time.
  // When more requests arrive than the GPUs sustain with the high
  // quantile's margin, a smaller margin lets them run larger batches, and
  // the answers it makes late are fewer than those the larger batches serve
  // (ChooseMargin). Below capacity the plan stays at `quantile`. A plan
  // that covered the tail of delays made by the overload itself would run
  // ever smaller batches, serve fewer, and drop ever more.
  bool overload_margins = true;
  // A quantile ignores the largest `outliers` samples of its window (so a
  // few samples cannot set it when the window holds few): over n samples
  // it is taken at min(quantile, 1 − outliers / n).
  int outliers = 3;
};

// What the model estimates over its window.
struct DelayEstimates {
  struct Measured {
    std::optional<Duration> value;  // at the model's quantile; none: no samples
    int64_t samples = 0;
  };
  std::array<Measured, kDelayKinds> delays;  // timer: at the timer quantile
  std::optional<Duration> timer_tail;        // timer lateness at the (high) quantile
  struct Compute {
    GpuId gpu = 0;
    ModelId model = 0;
    int64_t batches = 0;
    double ratio = 1;       // median of real / profiled compute time
    double scale = 1;       // what the plan uses: the ratio, or 1 within 5% of it
    double tail_scale = 1;  // the ratio at the quantile (at least `scale`)
    Duration late_start = 0;  // started − could have, at the quantile
  };
  std::vector<Compute> compute;  // the (GPU, model) pairs that ran batches in the window
  // Dispatch and response at the quantiles a plan may cover
  // (DelayModelOptions::overload_margins): the model's quantile first, then
  // lower ones.
  struct Margin {
    double quantile = 0;
    std::optional<Duration> dispatch, response;
  };
  std::vector<Margin> margins;
  double planned_quantile = 0;  // the one the plan covers (0: no plan made yet)
  std::vector<double> arrival_rates;  // per model: requests per second over the last second

  const Measured& operator[](Delay d) const { return delays[static_cast<int>(d)]; }
};

// Every sample of one delay since its model was made, in buckets with
// fixed bounds, as a Prometheus histogram counts them (a sample at a bound
// is in that bound's bucket: `le`). The plan's quantile says how slow the
// slowest of a recent window were; this says how many were slow over the
// whole run, which two runs (or two stacks side by side) compare by.
// Counted with `measure` off too.
struct DelayHistogram {
  // The buckets' upper bounds; an unbounded bucket follows the last.
  static constexpr std::array<Duration, 12> kBounds = {
      5 * kMicrosecond,   10 * kMicrosecond,  20 * kMicrosecond, 50 * kMicrosecond,
      100 * kMicrosecond, 200 * kMicrosecond, 500 * kMicrosecond, kMillisecond,
      2 * kMillisecond,   5 * kMillisecond,   10 * kMillisecond,  100 * kMillisecond};
  std::array<int64_t, kBounds.size() + 1> counts{};  // per bucket (not cumulative), by kBounds
  Duration sum = 0;                                  // of the samples

  int64_t count() const;
  // The samples over `bound`. REQUIRES: `bound` is one of kBounds.
  int64_t Over(Duration bound) const;
  // The bucket a sample of `value` falls in.
  static size_t Bucket(Duration value);
};

// The plan the estimates give: `fixed` with each measured delay raising its
// part (dispatch: network.ctrl, response: network.resp, timer: the frontrun
// slack, its tail: the head guard) and the compute plans of the measured
// (GPU, model) pairs. Measured
// parts stop at `cap` (DelayModelOptions::max_share): dispatch + response
// and the slack, each at most `cap` (never below what `fixed` says). Pure.
DelayPlan PlanDelays(const DelayPlan& fixed, const DelayEstimates& estimates, int gpus, int models,
                     Duration cap = kInfiniteFuture);

// Of `estimates.margins`, the one whose plan (PlanDelays with its dispatch
// and response) answers the most requests on time as the profiles tell:
// its quantile × Σ over sub-clusters of the requests they serve, all of
// their arrivals (`estimates.arrival_rates`) while U ≤ 1, else a 1/U share, where
// U = Σ_m rate_m · ℓ_m(b_m) / b_m / GPUs is the share of the sub-cluster's
// GPU time its models need at the batches b_m they sustain with that plan
// (SustainedBatch). A lower quantile must serve over 1% more than every
// higher one. Pure.
size_t ChooseMargin(const ClusterSpec& spec, const DelayPlan& fixed, const DelayEstimates& estimates,
                    Duration cap = kInfiniteFuture);

class DelayModel {
 public:
  // `spec` gives the models' profiles and the GPUs; `fixed` is the plan
  // with the configured delays (the floors).
  DelayModel(const ClusterSpec& spec, const DelayModelOptions& options, const DelayPlan& fixed);
  ~DelayModel();  // Stop()

  const DelayModelOptions& options() const { return options_; }

  // A sample of `delay`, stamped at the instant it was learnt (dispatch:
  // when its batch ended; response: when the batch's last answer was
  // written). Without `measure`, only counted in its histogram.
  void Record(Delay delay, Time at, Duration value);
  // A batch of `size` of `model` ran on `gpu`: it could start at `ready`
  // (its inputs at the executor, its start time come, the executor free),
  // started at `started` and finished at `finished`. Stamped `finished`.
  void RecordBatch(GpuId gpu, ModelId model, int size, Time ready, Time started, Time finished);
  // A request of `model` arrived at `at` (for the arrival rates that
  // overload_margins weighs).
  void RecordArrival(ModelId model, Time at);

  // Moves the window to end at `t` and remakes the plan. REQUIRES: t no
  // earlier than a previous Refresh's.
  DelayPlan Refresh(Time t);

  // As of the last Refresh.
  DelayPlan plan() const;
  DelayEstimates estimates() const;
  // As of now, by Delay.
  std::array<DelayHistogram, kDelayKinds> histograms() const;

  // Refreshes at every multiple of `refresh` on `clock` and calls `apply`
  // with the new plan when it changed, from the clock's timer (an owner that
  // serializes its scheduler passes its serialized clock). `clock` must
  // outlive the model or Stop().
  void Start(Clock* clock, std::function<void(const DelayPlan&)> apply);
  void Stop();

 private:
  struct ComputeStats {
    WindowedQuantile ratio;       // real / profiled compute, ×kRatioOne
    WindowedQuantile late_start;  // ns from ready to started
  };
  void Tick();
  ComputeStats& StatsFor(GpuId gpu, ModelId model);  // REQUIRES: mu_ held

  const ClusterSpec spec_;
  const DelayModelOptions options_;
  const DelayPlan fixed_;
  const Duration cap_;  // of the measured delays; see DelayModelOptions::max_share
  // The histograms' counts and sums, by Delay: counted without mu_ (and
  // with `measure` off), so each is exact but a snapshot may catch a sample
  // in its bucket before its sum.
  struct AtomicHistogram {
    std::array<std::atomic<int64_t>, DelayHistogram::kBounds.size() + 1> counts{};
    std::atomic<int64_t> sum{0};
  };
  std::array<AtomicHistogram, kDelayKinds> histograms_;

  mutable std::mutex mu_;
  std::vector<WindowedQuantile> delays_ ABSL_GUARDED_BY(mu_);  // by Delay
  absl::flat_hash_map<int64_t, std::unique_ptr<ComputeStats>> compute_ ABSL_GUARDED_BY(mu_);  // by gpu·models + model
  // Per model, arrivals counted by refresh slot over the last second:
  // (slot, count) in a ring.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> arrivals_ ABSL_GUARDED_BY(mu_);
  DelayEstimates estimates_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<Time, DelayEstimates>> held_ ABSL_GUARDED_BY(mu_);  // those of the last `hold`
  DelayPlan plan_ ABSL_GUARDED_BY(mu_);
  Clock* clock_ ABSL_GUARDED_BY(mu_) = nullptr;
  TimerId timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  std::function<void(const DelayPlan&)> apply_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tutti

#endif  // TUTTI_DELAYS_DELAY_MODEL_H_
