#include "tutti/delays/windowed_quantile.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tutti {
namespace {

// Floor division, for instants before a clock's origin.
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

}  // namespace

WindowedQuantile::WindowedQuantile(const Options& options)
    : options_(options),
      window_slots_(std::max<int64_t>(1, options.window / std::max<Duration>(1, options.slot))),
      buckets_(Bucket(options.max_value) + 1),
      ring_(window_slots_ + std::max(1, options.ahead_slots)),
      window_(buckets_, 0) {}

int WindowedQuantile::Bucket(int64_t value) const {
  const int s = options_.sub_bits;
  const uint64_t v = static_cast<uint64_t>(std::clamp<int64_t>(value, 0, options_.max_value));
  if (v < (uint64_t{1} << s)) return static_cast<int>(v);
  const int top = 63 - std::countl_zero(v);
  const int shift = top - s;
  const uint64_t mantissa = (v >> shift) & ((uint64_t{1} << s) - 1);
  return ((shift + 1) << s) + static_cast<int>(mantissa);
}

int64_t WindowedQuantile::UpperBound(int bucket) const {
  const int s = options_.sub_bits;
  if (bucket < (1 << s)) return bucket;
  const int shift = (bucket >> s) - 1;
  const uint64_t mantissa = static_cast<uint64_t>(bucket) & ((uint64_t{1} << s) - 1);
  return static_cast<int64_t>((((uint64_t{1} << s) | mantissa) << shift) + ((uint64_t{1} << shift) - 1));
}

WindowedQuantile::Slot& WindowedQuantile::SlotFor(int64_t index) {
  const int64_t n = static_cast<int64_t>(ring_.size());
  Slot& slot = ring_[((index % n) + n) % n];
  if (slot.index != index) {
    // The ring holds slots [end_ − window, end_ + ahead), distinct modulo its
    // size: what this one held is older than the window.
    slot.index = index;
    slot.max = 0;
    slot.total = 0;
    slot.counts.assign(buckets_, 0);
  }
  return slot;
}

void WindowedQuantile::AddToWindow(const Slot& slot, int sign) {
  for (int b = 0; b < buckets_; ++b) {
    window_[b] += sign * static_cast<int64_t>(slot.counts[b]);
    count_ += sign * static_cast<int64_t>(slot.counts[b]);
  }
}

void WindowedQuantile::Record(Time at, int64_t value) {
  int64_t k = FloorDiv(at, options_.slot);
  if (!started_) {
    started_ = true;
    end_ = k;
  }
  if (k < end_ - window_slots_) return;  // older than the window
  k = std::min<int64_t>(k, end_ + static_cast<int64_t>(ring_.size()) - window_slots_ - 1);
  Slot& slot = SlotFor(k);
  const int b = Bucket(value);
  ++slot.counts[b];
  ++slot.total;
  slot.max = std::max(slot.max, std::clamp<int64_t>(value, 0, options_.max_value));
  if (k < end_) {
    ++window_[b];
    ++count_;
  }
}

void WindowedQuantile::Advance(Time t) {
  const int64_t end = FloorDiv(t, options_.slot);
  if (!started_) {
    started_ = true;
    end_ = end;
    return;
  }
  if (end <= end_) return;
  if (end - end_ >= window_slots_) {
    std::fill(window_.begin(), window_.end(), 0);
    count_ = 0;
    for (int64_t i = end - window_slots_; i < end; ++i) {
      if (const Slot* s = Held(i)) AddToWindow(*s, +1);
    }
  } else {
    for (int64_t i = end_; i < end; ++i) {
      if (const Slot* s = Held(i)) AddToWindow(*s, +1);
    }
    for (int64_t i = end_ - window_slots_; i < end - window_slots_; ++i) {
      if (const Slot* s = Held(i)) AddToWindow(*s, -1);
    }
  }
  end_ = end;
}

const WindowedQuantile::Slot* WindowedQuantile::Held(int64_t index) const {
  const int64_t n = static_cast<int64_t>(ring_.size());
  const Slot& s = ring_[((index % n) + n) % n];
  return s.index == index ? &s : nullptr;
}

std::optional<int64_t> WindowedQuantile::QuantileOf(const std::vector<int64_t>& counts, int64_t count, int64_t max,
                                                    double q) const {
  if (count == 0) return std::nullopt;
  const int64_t rank = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(q * static_cast<double>(count))), 1, count);
  int64_t seen = 0;
  for (int b = 0; b < buckets_; ++b) {
    seen += counts[b];
    if (seen >= rank) return std::min(UpperBound(b), max);
  }
  return max;
}

std::optional<int64_t> WindowedQuantile::Quantile(double q) const {
  int64_t max = 0;
  for (int64_t i = end_ - window_slots_; i < end_; ++i) {
    if (const Slot* s = Held(i)) max = std::max(max, s->max);
  }
  return QuantileOf(window_, count_, max, q);
}

int64_t WindowedQuantile::RecentStart(int64_t min_count) const {
  int64_t seen = 0;
  int64_t i = end_;
  while (i > end_ - window_slots_ && seen < min_count) {
    --i;
    if (const Slot* s = Held(i)) seen += s->total;
  }
  return i;
}

int64_t WindowedQuantile::RecentCount(int64_t min_count) const {
  if (min_count <= 0 || count_ <= min_count) return count_;
  int64_t n = 0;
  for (int64_t i = RecentStart(min_count); i < end_; ++i) {
    if (const Slot* s = Held(i)) n += s->total;
  }
  return n;
}

std::optional<int64_t> WindowedQuantile::RecentQuantile(double q, int64_t min_count) const {
  if (min_count <= 0 || count_ <= min_count) return Quantile(q);
  std::vector<int64_t> counts(buckets_, 0);
  int64_t count = 0, max = 0;
  for (int64_t i = RecentStart(min_count); i < end_; ++i) {
    const Slot* s = Held(i);
    if (s == nullptr || s->total == 0) continue;
    for (int b = 0; b < buckets_; ++b) counts[b] += s->counts[b];
    count += s->total;
    max = std::max(max, s->max);
  }
  return QuantileOf(counts, count, max, q);
}

}  // namespace tutti
