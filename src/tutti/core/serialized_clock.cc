#include "tutti/core/serialized_clock.h"

#include <algorithm>
#include <utility>

namespace tutti {

SerializedClock::SerializedClock(Clock* base, std::function<void()> after, std::function<void(Time)> on_fire)
    : base_(base), gate_(std::make_shared<Gate>()) {
  gate_->after = std::move(after);
  gate_->on_fire = std::move(on_fire);
}

void SerializedClock::Close(std::unique_lock<std::mutex>& lock) {
  gate_->open = false;
  gate_->cv.wait(lock, [this] { return gate_->in_after == 0; });
}

TimerId SerializedClock::ScheduleAt(Time when, Callback callback) {
  // A timer set in the past is due now, not late.
  const Time due = gate_->on_fire ? std::max(when, base_->Now()) : when;
  return base_->ScheduleAt(when, [gate = gate_, due, cb = std::move(callback)] {
    {
      std::lock_guard<std::mutex> lock(gate->mu);
      if (!gate->open) return;
      if (gate->on_fire) gate->on_fire(due);
      cb();
      if (!gate->after) return;
      ++gate->in_after;
    }
    gate->after();
    std::lock_guard<std::mutex> lock(gate->mu);
    --gate->in_after;
    gate->cv.notify_all();
  });
}

}  // namespace tutti
