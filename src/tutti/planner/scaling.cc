#include "tutti/planner/scaling.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

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

namespace {

// The factor by which the load grows before GPUs asked for now serve
// (AutoscaleOptions::trend_window); 1 while it does not grow. Records `rate`.
double LookAhead(const AutoscaleOptions& o, double rate, AutoscaleMemory* memory) {
  if (o.trend_window <= 0) return 1;
  const size_t span = static_cast<size_t>(std::max<int64_t>(1, std::llround(static_cast<double>(o.trend_window) /
                                                                            static_cast<double>(o.interval))));
  std::vector<double>& rates = memory->rates;
  rates.push_back(rate);
  if (rates.size() > span + 1) rates.erase(rates.begin(), rates.end() - static_cast<std::ptrdiff_t>(span + 1));
  if (rates.size() < 2 || !(rates.front() > 0) || rate <= rates.front()) return 1;
  const double per_interval = std::pow(rate / rates.front(), 1.0 / static_cast<double>(rates.size() - 1));
  const double intervals = static_cast<double>(o.provision_delay + o.interval) / static_cast<double>(o.interval);
  return std::min(2.0, std::pow(per_interval, intervals));
}

}  // namespace

int AutoscaleStep(const AutoscaleOptions& o, int active, int pending, double bad_rate, double idle_fraction,
                  double rate, AutoscaleMemory* memory) {
  const int requested = active + pending;
  const double busy = 1 - std::clamp(idle_fraction, 0.0, 1.0);
  const double target = 1 - o.headroom;
  const double ahead = LookAhead(o, rate, memory);
  const double planned = busy * ahead;  // the busy fraction when what is asked for now serves
  const int to_target = static_cast<int>(std::ceil(active * planned / target - 1e-9)) - active;
  const bool bad = bad_rate > o.bad_rate_threshold;
  int change = 0;
  if (bad) {
    change = std::max(0, std::max(AdviseScaling(active, bad_rate, idle_fraction, o.bad_rate_threshold).add, to_target) -
                             pending);
  } else if (planned > target + o.headroom / 2) {
    change = std::max(0, to_target - pending);
  } else if (busy < target - o.headroom / 2 && pending == 0 && ahead == 1) {
    change = -static_cast<int>(std::floor(active * (1 - busy / target) + 1e-9));
  }
  if (rate < 0.9 * memory->floor_load) memory->floor = 0;  // the load fell: the floor goes
  if (change < 0) change = std::min(0, std::max(change, memory->floor - requested));
  change = std::clamp(requested + change, o.min_gpus, o.max_gpus) - requested;
  if (bad && memory->released_to == active) {  // that release went too far: not below this again
    memory->floor = requested + change;
    memory->floor_load = memory->released_load;
  }
  if (change < 0) {
    memory->released_to = active + change;
    memory->released_load = rate;
  } else if (change > 0 || bad) {
    memory->released_to = -1;
  }
  return change;
}

}  // namespace tutti
