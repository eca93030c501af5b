// Autoscaling, pure functions of what a cluster measured.
#ifndef TUTTI_PLANNER_SCALING_H_
#define TUTTI_PLANNER_SCALING_H_

#include <vector>

#include "tutti/core/time.h"

namespace tutti {

// Symphony §3.5's autoscaling advice: with bad rate r above the threshold,
// add N·r/(1 − r) GPUs; otherwise remove N·f, f the idle fraction.
struct ScalingAdvice {
  int add = 0;
  int remove = 0;
};
ScalingAdvice AdviseScaling(int gpus, double bad_rate, double idle_fraction, double bad_rate_threshold = 0.01);

// Closed-loop autoscaling: the advice acted on every `interval`, for a
// provider whose GPUs take `provision_delay` to come up (a cloud's VM and a
// model load) and go at once.
struct AutoscaleOptions {
  Duration interval = 10 * kSecond;
  double bad_rate_threshold = 0.01;
  // The idle share kept for bursts: the GPUs up aim at a busy fraction of
  // 1 − headroom (INFaaS scales up at 80% utilisation). 0 is Symphony's
  // rule alone, which releases every idle GPU (N·f) and adds only once
  // requests go bad.
  double headroom = 0.2;
  int min_gpus = 1;
  int max_gpus = 0;      // 0: every GPU of the cluster
  int initial_gpus = 0;  // up at the start; 0: min_gpus
  Duration provision_delay = 30 * kSecond;
  // Looking ahead: while the request rate grows, its growth per interval
  // over this window, compounded over provision_delay + interval (when GPUs
  // asked for now serve, and the next chance to ask), scales the busy
  // fraction additions plan for (at most 2×), and nothing is released.
  // GPUs that take 30 s to come then come for the load of 40 s on. 0: off.
  Duration trend_window = 60 * kSecond;
};

// The GPUs to request (> 0) or release (< 0) after an interval in which
// `active` GPUs (and `pending` requested ones, not yet up) saw `bad_rate`
// and were busy 1 − `idle_fraction` of the time. With target busy fraction
// u = 1 − headroom and N = active:
//   bad rate above the threshold: Symphony's N·r/(1 − r) more, or enough to
//     bring the busy fraction to u if that is more;
//   busy above u + headroom/2: enough to bring it to u;
//   busy below u − headroom/2, nothing pending: release N·(1 − busy/u)
//     (headroom 0: N·f, Symphony's release);
// less what is pending, keeping active + pending within [min_gpus,
// max_gpus] (REQUIRES: max_gpus resolved, ≥ min_gpus ≥ 1). Deferred
// scheduling makes the busy fraction proportional to the load (Symphony
// §3.5's flat top), so the GPUs up follow the load.
//
// Busy is proportional to load only roughly on a few GPUs (with fewer GPUs
// than models, say), so a release can make requests bad: `memory` notices
// (bad requests right after a release, at the size it left) and holds the
// size it then asks for as a floor until the load — `rate`, the requests
// the interval saw per second — falls 10% below the rate at that release.
// (Not GPUs × busy: with more GPUs up, deferred batches are smaller and the
// same requests keep the GPUs busier, so a floor measured in busy time
// would hold long after the requests fell.) `memory` also keeps the rates
// of the last trend_window for looking ahead (AutoscaleOptions).
struct AutoscaleMemory {
  std::vector<double> rates;  // the last intervals' request rates, oldest first (trend_window)
  int released_to = -1;      // the size the last release left, until an add
  double released_load = 0;  // the request rate at it
  int floor = 0;
  double floor_load = 0;
};
int AutoscaleStep(const AutoscaleOptions& options, int active, int pending, double bad_rate, double idle_fraction,
                  double rate, AutoscaleMemory* memory);

}  // namespace tutti

#endif  // TUTTI_PLANNER_SCALING_H_
