// Injected slowdowns, for resilience experiments (ParM §6.1's background
// shuffles): an instance inside a slowdown episode takes `factor` times as
// long per batch. The plan is a pure function of its options and seed; the
// decorator applies it to any executor, emulated or real. The decorator can
// also pace a real executor as an accelerator: every batch then takes at
// least a given time (emulated, and declared where it is used).
#ifndef TUTTI_EXECUTORS_SLOWDOWN_EXECUTOR_H_
#define TUTTI_EXECUTORS_SLOWDOWN_EXECUTOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"

namespace tutti {

struct SlowdownEpisode {
  Time start = 0;
  Time end = 0;
  double factor = 1;
  // Random: each batch takes 1 + (factor − 1)·E times as long, E ~ Exp(1) —
  // most slowed batches a little, a few a lot, as under network contention.
  // Otherwise exactly `factor` times as long.
  bool random = false;

  bool operator==(const SlowdownEpisode&) const = default;
};

struct SlowdownOptions {
  int concurrent = 4;        // episodes under way at any time (0: none)
  int instances_per_episode = 2;  // a shuffle slows its sender and its receiver
  Duration min_duration = 500 * kMillisecond;
  Duration max_duration = 2 * kSecond;
  double factor = 3;         // (mean) batch latency multiplier while slowed
  bool random = true;        // see SlowdownEpisode::random
  uint64_t seed = 1;
};

// Per instance, its slowdown episodes in [start, end): `concurrent` episodes
// run at all times, each on `instances_per_episode` distinct random instances
// for a uniform random duration; when one ends the next begins.
std::vector<std::vector<SlowdownEpisode>> PlanSlowdowns(int instances, const SlowdownOptions& options, Time start,
                                                        Time end);

// Runs batches on `inner` one at a time; a batch that starts inside an
// episode is held back for (multiplier − 1) × its run time before it is
// reported finished, and the next batch waits for it. `seed` drives the
// random multipliers. With `pace` > 0, a batch is also held until `pace`
// after it started: an accelerator whose batches take `pace` while the CPU
// is free, over the inner executor's outputs (its own time, if longer,
// stands).
//
// Thread-safety: as Executor. `clock` must outlive it.
class SlowdownExecutor final : public Executor {
 public:
  SlowdownExecutor(Clock* clock, std::unique_ptr<Executor> inner, std::vector<SlowdownEpisode> episodes,
                   uint64_t seed = 1, Duration pace = 0);

  void Run(ExecBatch batch, DoneFn done) override;
  void Load(const ExecLoad& load) override { inner_->Load(load); }
  std::string kind() const override { return inner_->kind(); }

  // The episode under way at `t` with the largest factor, or null.
  const SlowdownEpisode* EpisodeAt(Time t) const;

 private:
  void Start(ExecBatch batch, DoneFn done);
  void Finish(ExecResult result, DoneFn done);

  Clock* const clock_;
  const std::unique_ptr<Executor> inner_;
  const std::vector<SlowdownEpisode> episodes_;  // sorted by start
  const Duration pace_;
  std::mutex mu_;
  std::deque<std::pair<ExecBatch, DoneFn>> queue_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_SLOWDOWN_EXECUTOR_H_
