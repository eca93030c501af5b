#include "tutti/core/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tutti {
namespace {
// Values are bucketed in units of 8 ns: 1% of 1 µs is well below that.
constexpr int kUnitShift = 3;
constexpr int kBuckets = (64 - 7) * 128 + 128;
}  // namespace

Histogram::Histogram() : buckets_(kBuckets) {}

int Histogram::BucketOf(uint64_t units) {
  if (units < (1u << kSubBits)) return static_cast<int>(units);
  const int top = 63 - std::countl_zero(units);   // highest set bit, >= kSubBits
  const int shift = top - kSubBits;               // drop the bits below the 7 after the top
  const uint64_t mantissa = (units >> shift) & ((1u << kSubBits) - 1);
  return ((shift + 1) << kSubBits) + static_cast<int>(mantissa);
}

uint64_t Histogram::UpperBoundOf(int bucket) {
  if (bucket < (1 << kSubBits)) return bucket;
  const int shift = (bucket >> kSubBits) - 1;
  const uint64_t mantissa = bucket & ((1 << kSubBits) - 1);
  return (((uint64_t{1} << kSubBits) | mantissa) << shift) + ((uint64_t{1} << shift) - 1);
}

void Histogram::Record(Duration value, int64_t count) {
  value = std::max<Duration>(0, value);
  buckets_[BucketOf(static_cast<uint64_t>(value) >> kUnitShift)] += count;
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  count_ += count;
  sum_ += static_cast<double>(value) * count;
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  min_ = count_ ? std::min(min_, other.min_) : other.min_;
  max_ = count_ ? std::max(max_, other.max_) : other.max_;
  count_ += other.count_;
  sum_ += other.sum_;
}

Duration Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * count_)));
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const Duration upper = static_cast<Duration>(((UpperBoundOf(i) + 1) << kUnitShift) - 1);
      return std::clamp(upper, min_, max_);
    }
  }
  return max_;
}

}  // namespace tutti
