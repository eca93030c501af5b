// Delay injection: distributions of the delays a real cluster adds, for the
// simulator to replay (and for tests to inject into the serving core), so
// that both plan with the same measured delays by the same rule
// (delay_model.h).
//
// A sample is a pure function of the distribution, the seed and a key —
// not of the order of the draws — so a simulator that draws an answer's
// delay when its batch is dispatched and a test harness that draws it when
// the answer comes back get the same value for the same request (keyed by
// its arrival instant, say).
#ifndef TUTTI_DELAYS_DELAY_INJECTION_H_
#define TUTTI_DELAYS_DELAY_INJECTION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/core/time.h"

namespace tutti {

// A distribution of durations, given by its quantile function.
class DelayDistribution {
 public:
  // Always `d`.
  static DelayDistribution Constant(Duration d);
  // Uniform on [lo, hi].
  static absl::StatusOr<DelayDistribution> Uniform(Duration lo, Duration hi);
  // Exponential with this mean.
  static absl::StatusOr<DelayDistribution> Exponential(Duration mean);
  // Log-normal with this median and 99.9th percentile (p999 >= median > 0).
  static absl::StatusOr<DelayDistribution> LogNormal(Duration median, Duration p999);
  // Piecewise linear between quantile points {q → value}, q in [0, 1]
  // increasing, values non-decreasing, including q = 1 (the largest); below
  // the first point, linear from 0. What a server's measured quantiles
  // (/v2/models/{m}/stats) describe.
  static absl::StatusOr<DelayDistribution> FromQuantiles(std::map<double, Duration> points);

  // The u-quantile, u in [0, 1).
  Duration Quantile(double u) const;

 private:
  enum class Kind { kConstant, kUniform, kExponential, kLogNormal, kPoints };
  Kind kind_ = Kind::kConstant;
  double a_ = 0, b_ = 0;  // constant: a; uniform: [a, b]; exponential: mean a; log-normal: mu a, sigma b (of ns)
  std::vector<std::pair<double, Duration>> points_;
};

// Streams, so that the delays of different kinds drawn with equal keys differ.
inline constexpr uint64_t kDispatchStream = 1, kResponseStream = 2, kTimerStream = 3;

// What the emulated cluster adds to every batch; absent parts add nothing
// (the simulator's exact GPUs).
struct DelayInjection {
  std::optional<DelayDistribution> dispatch;  // decision → the batch at its GPU
  std::optional<DelayDistribution> response;  // a batch's end → each answer written
  // One response delay for all the answers of a batch (keyed by its
  // earliest deadline), as a stalled answer path gives; else one per answer
  // (keyed by its arrival).
  bool response_per_batch = false;
  std::optional<DelayDistribution> timer;     // how late each scheduler timer fires
  std::map<int, double> compute_scale;        // per GPU: ℓ(b) runs this many times as long
  uint64_t seed = 1;

  bool empty() const { return !dispatch && !response && !timer && compute_scale.empty(); }
  double ScaleOf(int gpu) const;
  // A sample of `d` for `key`, a pure function of (d, seed, key, stream).
  Duration Sample(const std::optional<DelayDistribution>& d, uint64_t stream, uint64_t key) const;
  // The response delay of an answer that arrived at `arrival`, in a batch
  // whose earliest deadline is `batch_deadline`.
  Duration Response(Time arrival, Time batch_deadline) const {
    return Sample(response, kResponseStream,
                  static_cast<uint64_t>(response_per_batch ? batch_deadline : arrival));
  }
};


// A clock whose timers fire late by the injection's timer delay (keyed by
// their due instant), over a base clock — the simulator's and the tests'
// way to make a scheduler meet late timers. `on_late(lateness)` hears each
// firing, as the serving core's clock reports timer lateness.
// Thread-safety: as the base clock's.
class LateTimerClock final : public Clock {
 public:
  // `base` and `injection` must outlive this clock.
  LateTimerClock(Clock* base, const DelayInjection* injection, std::function<void(Duration)> on_late = {});

  Time Now() const override { return base_->Now(); }
  TimerId ScheduleAt(Time when, Callback callback) override;
  bool Cancel(TimerId id) override { return base_->Cancel(id); }

 private:
  Clock* const base_;
  const DelayInjection* const injection_;
  const std::function<void(Duration)> on_late_;
};

}  // namespace tutti

#endif  // TUTTI_DELAYS_DELAY_INJECTION_H_
