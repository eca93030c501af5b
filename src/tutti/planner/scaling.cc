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

}  // namespace tutti
