#include "tutti/netdelay/link_delay.h"

#include <algorithm>

namespace tutti {

Time LinkDelay::Release(Time now) {
  Duration d = delay_;
  if (jitter_ > 0) d += std::uniform_int_distribution<Duration>(-jitter_, jitter_)(rng_);
  last_ = std::max(last_, now + std::max<Duration>(0, d));
  return last_;
}

}  // namespace tutti
