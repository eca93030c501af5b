#include "tutti/distributed/clock_sync.h"

#include <algorithm>

namespace tutti {

void ClockSync::Add(Time t1, Time t2, Time t3, Time t4) {
  const Duration round_trip = std::max<Duration>(0, (t4 - t1) - (t3 - t2));
  samples_.push_back({((t2 - t1) + (t3 - t4)) / 2, round_trip});
  while (static_cast<int>(samples_.size()) > keep_) samples_.pop_front();
}

const ClockSync::Sample& ClockSync::Best() const {
  return *std::min_element(samples_.begin(), samples_.end(),
                           [](const Sample& a, const Sample& b) { return a.round_trip < b.round_trip; });
}

Duration ClockSync::offset() const { return Best().offset; }
Duration ClockSync::uncertainty() const { return Best().round_trip / 2; }

}  // namespace tutti
