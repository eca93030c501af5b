// TimerQueue: the pending timers of a clock, ordered by (time, insertion).
//
// Shared by ManualClock and RealClock so both fire equal-time timers in the
// order they were scheduled (the ns-3 (time, seq) rule). Cancellation is O(1)
// and lazy: a cancelled entry stays in the heap until it reaches the top.
//
// Thread-safety: none; callers serialize access.
#ifndef TUTTI_CORE_TIMER_QUEUE_H_
#define TUTTI_CORE_TIMER_QUEUE_H_

#include <cstddef>
#include <optional>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/core/clock.h"

namespace tutti {

class TimerQueue {
 public:
  struct Due {
    TimerId id;
    Time when;
    Clock::Callback callback;
  };

  // Adds a timer; ids increase with each call, starting at 1.
  TimerId Add(Time when, Clock::Callback callback);

  // Removes a pending timer. Returns false if `id` is not pending.
  bool Cancel(TimerId id);

  // The instant of the earliest pending timer, if any.
  std::optional<Time> NextTime();

  // Removes and returns the earliest pending timer if it is due at or before
  // `now`.
  std::optional<Due> PopDue(Time now);

  size_t size() const { return callbacks_.size(); }
  bool empty() const { return callbacks_.empty(); }

 private:
  struct Entry {
    Time when;
    TimerId id;
    bool operator>(const Entry& o) const {
      return when != o.when ? when > o.when : id > o.id;
    }
  };
  void DropCancelledTop();

  TimerId next_id_ = 1;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  absl::flat_hash_map<TimerId, Clock::Callback> callbacks_;
};

}  // namespace tutti

#endif  // TUTTI_CORE_TIMER_QUEUE_H_
