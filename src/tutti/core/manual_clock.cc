#include "tutti/core/manual_clock.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace tutti {

TimerId ManualClock::ScheduleAt(Time when, Callback callback) {
  return timers_.Add(when, std::move(callback));
}

bool ManualClock::Cancel(TimerId id) { return timers_.Cancel(id); }

void ManualClock::AdvanceTo(Time t) {
  assert(t >= now_);
  while (auto due = timers_.PopDue(t)) {
    now_ = std::max(now_, due->when);
    due->callback();
  }
  now_ = t;
}

bool ManualClock::RunNextTimer() {
  const std::optional<Time> next = timers_.NextTime();
  if (!next) return false;
  auto due = timers_.PopDue(std::max(*next, now_));
  now_ = std::max(now_, due->when);
  due->callback();
  return true;
}

}  // namespace tutti
