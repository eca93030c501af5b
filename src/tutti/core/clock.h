// The injected clock: the only way Tutti's scheduling code learns the time or
// asks to be woken up. The server passes a RealClock, unit tests a ManualClock
// they advance by hand, and the simulator drives a ManualClock as its virtual
// time (see manual_clock.h), so one scheduler object runs under all three.
#ifndef TUTTI_CORE_CLOCK_H_
#define TUTTI_CORE_CLOCK_H_

#include <cstdint>
#include <functional>

#include "tutti/core/time.h"

namespace tutti {

// Identifies a scheduled timer. Never 0 for a real timer.
using TimerId = uint64_t;
inline constexpr TimerId kNoTimer = 0;

// A source of time and of one-shot timers.
//
// Thread-safety: implementations document it; RealClock is fully thread-safe,
// ManualClock is single-threaded.
class Clock {
 public:
  using Callback = std::function<void()>;

  virtual ~Clock() = default;

  // The current instant. Non-decreasing across calls.
  virtual Time Now() const = 0;

  // Runs `callback` once, at or after instant `when` (immediately-due timers
  // are allowed: `when` <= Now() fires at the next opportunity, never inside
  // this call). Timers due at the same instant fire in the order they were
  // scheduled. The clock owns `callback` until it has run or been cancelled.
  // Never blocks.
  virtual TimerId ScheduleAt(Time when, Callback callback) = 0;

  // Cancels a pending timer. Returns true iff the timer had not yet started
  // running; its callback is then destroyed without running. Cancelling an
  // unknown, fired or already cancelled id returns false.
  virtual bool Cancel(TimerId id) = 0;

  // Convenience: ScheduleAt(Now() + delay, ...).
  TimerId ScheduleAfter(Duration delay, Callback callback) {
    return ScheduleAt(Now() + delay, std::move(callback));
  }
};

}  // namespace tutti

#endif  // TUTTI_CORE_CLOCK_H_
