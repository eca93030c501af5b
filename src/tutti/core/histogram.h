// Histogram: counts of non-negative durations in log-linear buckets (as in
// HdrHistogram): exact below 1 µs·2^7, then 128 sub-buckets per power of
// two, so quantiles are within 1% of the true value. Constant memory, O(1)
// record; for latency percentiles over millions of requests.
//
// Thread-safety: none.
#ifndef TUTTI_CORE_HISTOGRAM_H_
#define TUTTI_CORE_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "tutti/core/time.h"

namespace tutti {

class Histogram {
 public:
  Histogram();

  // Records `value` (clamped at 0) `count` times.
  void Record(Duration value, int64_t count = 1);
  void Merge(const Histogram& other);

  int64_t count() const { return count_; }
  Duration min() const { return count_ ? min_ : 0; }
  Duration max() const { return count_ ? max_ : 0; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }

  // The smallest recorded bucket value v with at least q of the records <= v
  // (q in [0, 1]); 0 when empty. Reported as the bucket's upper bound,
  // clamped to max().
  Duration Quantile(double q) const;

 private:
  static constexpr int kSubBits = 7;  // 128 sub-buckets
  static int BucketOf(uint64_t units);
  static uint64_t UpperBoundOf(int bucket);

  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  double sum_ = 0;
  Duration min_ = 0;
  Duration max_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_CORE_HISTOGRAM_H_
