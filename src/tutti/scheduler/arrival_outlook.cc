#include "tutti/scheduler/arrival_outlook.h"

#include <algorithm>
#include <cmath>

namespace tutti {

void ArrivalOutlook::Counts::Add(int count, double v) {
  total_ += v;
  for (int i = count + 1; i < static_cast<int>(tree_.size()); i += i & -i) tree_[i] += v;
}

double ArrivalOutlook::Counts::Prefix(int count) const {
  double sum = 0;
  for (int i = count; i > 0; i -= i & -i) sum += tree_[i];
  return sum;
}

double ArrivalOutlook::Counts::AtLeast(int count) const { return total_ - Prefix(count); }

ArrivalOutlook::ArrivalOutlook(int max_count, Duration epoch, Time now)
    : max_count_(max_count),
      epoch_(epoch),
      current_(max_count + 1),
      previous_(max_count + 1),
      epoch_end_(now + epoch),
      last_(now) {}

void ArrivalOutlook::Accumulate(Time until) {
  if (until > last_) current_.time.Add(Slot(), static_cast<double>(until - last_));
  last_ = std::max(last_, until);
}

void ArrivalOutlook::AdvanceTo(Time now) {
  while (!departures_.empty() && departures_.top().first <= now) {
    const auto [when, handle] = departures_.top();
    departures_.pop();
    const auto it = pending_.find(handle);
    if (it == pending_.end()) continue;  // answered before its time
    Accumulate(when);
    outstanding_ = std::max<int64_t>(0, outstanding_ - it->second);
    pending_.erase(it);
  }
  Accumulate(now);
  if (now < epoch_end_) return;
  if (now >= epoch_end_ + epoch_) {  // idle for a whole epoch: nothing recent to go by
    previous_.arrivals.Clear();
    previous_.time.Clear();
    ceiling_ = -1;
  } else {
    std::swap(previous_, current_);
  }
  current_.arrivals.Clear();
  current_.time.Clear();
  epoch_end_ = now + epoch_;
}

void ArrivalOutlook::Arrive(Time now) {
  AdvanceTo(now);
  if (ceiling_ >= 0 && Slot() >= ceiling_) ceiling_ = -1;  // an arrival at the ceiling: none
  current_.arrivals.Add(Slot(), 1);
  ++outstanding_;
}

uint64_t ArrivalOutlook::Dispatch(Time now, int n, Time answered_at) {
  AdvanceTo(now);
  const uint64_t handle = next_handle_++;
  pending_.emplace(handle, n);
  departures_.emplace(std::max(now, answered_at), handle);
  return handle;
}

void ArrivalOutlook::Answered(Time now, uint64_t handle) {
  AdvanceTo(now);
  const auto it = pending_.find(handle);
  if (it == pending_.end()) return;
  outstanding_ = std::max<int64_t>(0, outstanding_ - it->second);
  pending_.erase(it);
}

void ArrivalOutlook::Drop(Time now) {
  AdvanceTo(now);
  outstanding_ = std::max<int64_t>(0, outstanding_ - 1);
}

bool ArrivalOutlook::Closed(Time now) {
  AdvanceTo(now);
  if (ceiling_ >= 0) return true;
  auto arrivals = [&](int n) { return current_.arrivals.AtLeast(n) + previous_.arrivals.AtLeast(n); };
  auto time = [&](int n) { return current_.time.AtLeast(n) + previous_.time.AtLeast(n); };
  if (arrivals(0) <= 0 || arrivals(max_count_) > 0) return false;
  // The ceiling: the lowest count at which nothing arrived (arrivals(·)
  // does not grow with the count).
  int lo = 0, hi = max_count_;  // arrivals(lo) > 0, arrivals(hi) == 0
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (arrivals(mid) > 0 ? lo : hi) = mid;
  }
  // The rate while fewer were outstanding; ten of its arrivals not come make
  // an open source's silence a 1-in-20,000 chance, ceilings picked as the
  // highest counts reached included.
  const double below = arrivals(0) / std::max(time(0) - time(hi), 1.0);
  if (below * time(hi) < 10) return false;
  ceiling_ = hi;
  return true;
}

ArrivalOutlook::Forecast ArrivalOutlook::Expected(Time now, Duration wait) {
  AdvanceTo(now);
  if (wait <= 0) return {};
  auto arrivals = [&](int n) { return current_.arrivals.AtLeast(n) + previous_.arrivals.AtLeast(n); };
  auto time = [&](int n) { return current_.time.AtLeast(n) + previous_.time.AtLeast(n); };
  const double w = static_cast<double>(wait);
  const int n = Slot();
  const double watched = time(n);
  if (watched >= w) return {arrivals(n) * w / watched, kNever};
  // The highest count watched for w (time(·) does not grow with the count).
  int lo = -1, hi = n;  // time(lo) >= w (lo = -1: none), time(hi) < w
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (time(mid) >= w ? lo : hi) = mid;
  }
  const double below = lo < 0 ? 0 : arrivals(lo) / time(lo);
  if (below <= 0) return {arrivals(n), kNever};
  // Arrivals seen at this count: not a ceiling. None yet: an open source
  // would have sent below·watched by now, so the chance it is one (against
  // a ceiling, even odds at first) falls with every one that did not come.
  const double silent = arrivals(n) > 0 ? 0 : below * watched;
  const double open = 1 / (1 + std::exp(silent));
  const double expected = arrivals(n) + 2 * open * below * (w - watched);
  // After three more arrivals' worth of silence the forecast has moved.
  const Duration recheck = arrivals(n) > 0 ? kNever : static_cast<Duration>(std::ceil(3 / below));
  return {expected, recheck};
}

}  // namespace tutti
