#include "tutti/planner/scaling.h"

#include <algorithm>
#include <cmath>

namespace tutti {

ScalingAdvice AdviseScaling(int gpus, double bad_rate, double idle_fraction, double bad_rate_threshold) {
  ScalingAdvice advice;
  if (bad_rate > bad_rate_threshold) {
    advice.add = static_cast<int>(std::ceil(gpus * bad_rate / std::max(1e-9, 1 - bad_rate)));
  } else {
    advice.remove = static_cast<int>(std::floor(gpus * std::clamp(idle_fraction, 0.0, 1.0)));
  }
  return advice;
}

int AutoscaleStep(const AutoscaleOptions& o, int active, int pending, double bad_rate, double idle_fraction,
                  double rate, AutoscaleMemory* memory) {
  const int requested = active + pending;
  const double busy = 1 - std::clamp(idle_fraction, 0.0, 1.0);
  const double target = 1 - o.headroom;
  const int to_target = static_cast<int>(std::ceil(active * busy / target - 1e-9)) - active;
  const bool bad = bad_rate > o.bad_rate_threshold;
  int change = 0;
  if (bad) {
    change = std::max(0, std::max(AdviseScaling(active, bad_rate, idle_fraction, o.bad_rate_threshold).add, to_target) -
                             pending);
  } else if (busy > target + o.headroom / 2) {
    change = std::max(0, to_target - pending);
  } else if (busy < target - o.headroom / 2 && pending == 0) {
    change = -static_cast<int>(std::floor(active * (1 - busy / target) + 1e-9));
  }
  const double load = rate;
  if (load < 0.9 * memory->floor_load) memory->floor = 0;  // the load fell: the floor goes
  if (change < 0) change = std::min(0, std::max(change, memory->floor - requested));
  change = std::clamp(requested + change, o.min_gpus, o.max_gpus) - requested;
  if (bad && memory->released_to == active) {  // that release went too far: not below this again
    memory->floor = requested + change;
    memory->floor_load = memory->released_load;
  }
  if (change < 0) {
    memory->released_to = active + change;
    memory->released_load = load;
  } else if (change > 0 || bad) {
    memory->released_to = -1;
  }
  return change;
}

}  // namespace tutti
