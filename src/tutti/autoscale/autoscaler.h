// Autoscaler: closed-loop autoscaling over a pool of GPUs (executors),
// driven by a clock — virtual time in the simulator, the event loop in
// `tutti serve`. Every `interval` it reads what the interval measured,
// asks AutoscaleStep (planner/scaling.h) for a change and acts on it
// (unless GPUs came during the interval: then it waits for one that
// measured the new size):
// GPUs [0, up) serve, [up, requested) are being provisioned and serve
// `provision_delay` after they were requested, the highest-numbered are
// released at once. Deterministic under a manual clock.
//
// Thread-safe: ticks run on the clock's timer thread; the readers below may
// be called from any thread.
#ifndef TUTTI_AUTOSCALE_AUTOSCALER_H_
#define TUTTI_AUTOSCALE_AUTOSCALER_H_

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/clock.h"
#include "tutti/core/outcome_counts.h"
#include "tutti/planner/scaling.h"

namespace tutti {

class Autoscaler {
 public:
  // What the GPUs up did in an interval: how the requests that ended in it
  // ended, and the GPU time spent running batches.
  struct Window {
    OutcomeCounts outcomes;
    Duration busy = 0;
  };
  using ReadFn = std::function<Window()>;                // since its last call
  using SetUpFn = std::function<void(int gpu, bool up)>;  // brings a GPU up or takes it down

  // InvalidArgument unless interval > 0, provision delay ≥ 0,
  // 1 ≤ min_gpus ≤ initial_gpus ≤ max_gpus ≤ total_gpus (0s resolved as
  // AutoscaleOptions says), headroom in [0, 1).
  static absl::Status Validate(const AutoscaleOptions& options, int total_gpus);

  // REQUIRES: Validate(options, total_gpus).ok(); `clock` outlives this.
  // Ticks stop at `end` (the simulator's last arrival).
  Autoscaler(AutoscaleOptions options, int total_gpus, Clock* clock, ReadFn read, SetUpFn set_up,
             Time end = kInfiniteFuture);
  ~Autoscaler();

  // Takes GPUs [initial, total) down through set_up and starts ticking.
  void Start();
  // Stops ticking; GPUs on their way do not come. Idempotent.
  void Stop();

  int up() const;
  int requested() const;
  int scale_ups() const;
  int scale_downs() const;
  // (time, GPUs up from then on), in time order, from Start().
  std::vector<std::pair<Time, int>> allocation() const;
  // GPU-seconds up within [from, to).
  double GpuSeconds(Time from, Time to) const;

 private:
  void Tick();
  void Arrive(int from, int to);

  AutoscaleOptions o_;
  const int total_;
  Clock* const clock_;
  const ReadFn read_;
  const SetUpFn set_up_;
  const Time end_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  bool arrived_ = false;  // GPUs came since the last tick
  int up_ = 0, requested_ = 0, scale_ups_ = 0, scale_downs_ = 0;
  AutoscaleMemory memory_;
  std::vector<std::pair<Time, int>> allocation_;
  TimerId tick_ = kNoTimer;
  std::vector<TimerId> arrivals_;  // GPUs on their way (ids of fired ones are harmless to cancel)
};

}  // namespace tutti

#endif  // TUTTI_AUTOSCALE_AUTOSCALER_H_
