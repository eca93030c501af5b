#include "tutti/delays/response_tracker.h"

#include <algorithm>

namespace tutti {

void ResponseTracker::Written(const WrittenAnswer& answer, Time now, std::vector<Sample>* out) {
  Expire(now, out);
  if (answer.batch == 0) return;
  const Duration delay = std::max<Duration>(0, now - answer.from);
  if (answer.answers <= 1) {
    out->push_back({now, delay});
    return;
  }
  auto [it, added] = batches_.try_emplace(answer.batch);
  Batch& b = it->second;
  if (added) {
    b.remaining = answer.answers;
    started_.emplace_back(now, answer.batch);
  }
  b.worst = std::max(b.worst, delay);
  b.last = now;
  if (--b.remaining > 0) return;
  out->push_back({now, b.worst});
  batches_.erase(it);
}

void ResponseTracker::Expire(Time now, std::vector<Sample>* out) {
  while (!started_.empty() && started_.front().first <= now - timeout_) {
    const uint64_t id = started_.front().second;
    started_.pop_front();
    auto it = batches_.find(id);
    if (it == batches_.end()) continue;  // completed
    out->push_back({it->second.last, it->second.worst});
    batches_.erase(it);
  }
}

}  // namespace tutti
