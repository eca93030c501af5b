#include "tutti/core/timer_queue.h"

#include <utility>

namespace tutti {

TimerId TimerQueue::Add(Time when, Clock::Callback callback) {
  const TimerId id = next_id_++;
  heap_.push(Entry{when, id});
  callbacks_.emplace(id, std::move(callback));
  return id;
}

bool TimerQueue::Cancel(TimerId id) { return callbacks_.erase(id) > 0; }

void TimerQueue::DropCancelledTop() {
  while (!heap_.empty() && !callbacks_.contains(heap_.top().id)) heap_.pop();
}

std::optional<Time> TimerQueue::NextTime() {
  DropCancelledTop();
  if (heap_.empty()) return std::nullopt;
  return heap_.top().when;
}

std::optional<TimerQueue::Due> TimerQueue::PopDue(Time now) {
  DropCancelledTop();
  if (heap_.empty() || heap_.top().when > now) return std::nullopt;
  const Entry top = heap_.top();
  heap_.pop();
  auto it = callbacks_.find(top.id);
  Due due{top.id, top.when, std::move(it->second)};
  callbacks_.erase(it);
  return due;
}

}  // namespace tutti
