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
    Accumulate(departures_.top().first);
    outstanding_ = std::max<int64_t>(0, outstanding_ - departures_.top().second);
    departures_.pop();
  }
  Accumulate(now);
  if (now < epoch_end_) return;
  if (now >= epoch_end_ + epoch_) {  // idle for a whole epoch: nothing recent to go by
    previous_.arrivals.Clear();
    previous_.time.Clear();
  } else {
    std::swap(previous_, current_);
  }
  current_.arrivals.Clear();
  current_.time.Clear();
  epoch_end_ = now + epoch_;
}

void ArrivalOutlook::Arrive(Time now) {
  AdvanceTo(now);
  current_.arrivals.Add(Slot(), 1);
  ++outstanding_;
}

void ArrivalOutlook::Dispatch(Time now, int n, Time answered_at) {
  AdvanceTo(now);
  departures_.emplace(std::max(now, answered_at), n);
}

void ArrivalOutlook::Drop(Time now) {
  AdvanceTo(now);
  outstanding_ = std::max<int64_t>(0, outstanding_ - 1);
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
