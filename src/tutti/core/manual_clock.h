// ManualClock: time moves only when its owner says so.
//
// Unit tests advance it by hand; the discrete-event simulator uses it as its
// virtual clock by repeatedly jumping to the next pending timer
// (RunNextTimer). Timers fire inside AdvanceTo/AdvanceBy/RunNextTimer, in
// (time, insertion) order, with Now() equal to their scheduled instant (or the
// current instant, for timers scheduled in the past). A callback may schedule
// or cancel timers; ones that fall due within the same advance also fire.
//
// Thread-safety: single-threaded. Not safe to call from several threads.
#ifndef TUTTI_CORE_MANUAL_CLOCK_H_
#define TUTTI_CORE_MANUAL_CLOCK_H_

#include <cstddef>
#include <optional>

#include "tutti/core/clock.h"
#include "tutti/core/timer_queue.h"

namespace tutti {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = 0) : now_(start) {}

  Time Now() const override { return now_; }
  TimerId ScheduleAt(Time when, Callback callback) override;
  bool Cancel(TimerId id) override;

  // Fires every timer due at or before `t` in order, then sets Now() to `t`.
  // REQUIRES: t >= Now().
  void AdvanceTo(Time t);
  void AdvanceBy(Duration d) { AdvanceTo(now_ + d); }

  // Jumps to the earliest pending timer and fires it. Returns false (and does
  // nothing) when no timer is pending.
  bool RunNextTimer();

  std::optional<Time> NextTimerTime() { return timers_.NextTime(); }
  size_t pending_timers() const { return timers_.size(); }

 private:
  Time now_;
  TimerQueue timers_;
};

}  // namespace tutti

#endif  // TUTTI_CORE_MANUAL_CLOCK_H_
