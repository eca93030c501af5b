// SerializedClock: a Clock whose timer callbacks run under a caller-owned
// mutex, so that an object that is not thread-safe (a Scheduler) can be
// driven both by its owner's threads, which take the same mutex, and by its
// own timers on a real clock's thread.
//
// After a callback has run (and the mutex is released), `after` is called,
// unlocked: the owner's hook to act on work the callback queued. Before a
// callback runs, `on_fire(due)` is called under the mutex with the instant
// the timer was due (its time, or when it was set if that was later): the
// owner's hook to measure how late its timers run.
//
// Closing the gate (Close(), under the mutex) turns timers that fire later
// into no-ops and waits for callbacks in their unlocked `after` part, so the
// owner can then be destroyed while the base clock lives on.
#ifndef TUTTI_CORE_SERIALIZED_CLOCK_H_
#define TUTTI_CORE_SERIALIZED_CLOCK_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "tutti/core/clock.h"

namespace tutti {

class SerializedClock final : public Clock {
 public:
  // `base` must outlive this clock; `after` and `on_fire` may be empty.
  SerializedClock(Clock* base, std::function<void()> after = {}, std::function<void(Time when)> on_fire = {});

  // The mutex timer callbacks run under; the owner serializes with it.
  std::mutex& mu() { return gate_->mu; }
  // REQUIRES: `lock` holds mu(). Later timers do nothing; returns once no
  // callback is in its `after` part (`lock` is held again on return).
  void Close(std::unique_lock<std::mutex>& lock);

  Time Now() const override { return base_->Now(); }
  bool Cancel(TimerId id) override { return base_->Cancel(id); }
  TimerId ScheduleAt(Time when, Callback callback) override;

 private:
  // Shared with pending timer callbacks, which may outlive this clock.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = true;
    int in_after = 0;
    std::function<void()> after;
    std::function<void(Time)> on_fire;
  };
  Clock* const base_;
  const std::shared_ptr<Gate> gate_;
};

}  // namespace tutti

#endif  // TUTTI_CORE_SERIALIZED_CLOCK_H_
