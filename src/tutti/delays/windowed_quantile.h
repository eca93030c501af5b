// WindowedQuantile: quantiles of the values recorded over a sliding window
// of time, at O(1) per record and O(buckets) per query, in constant memory.
// The delay model keeps one per measured delay (delay_model.h).
//
// Time is cut into slots of `slot` nanoseconds (slot k covers [k·slot,
// (k+1)·slot)). The window at instant t holds the values stamped in the
// `window / slot` whole slots before the slot holding t — [t − window, t)
// with t rounded down to a slot boundary — so a query at t sees only values
// stamped before that boundary. A value lands in the slot of its stamp, not
// of the moment it is recorded: a simulator that computes an event's delays
// ahead of time records them early, stamped with their future instants, and
// gets the same estimates as a server that records them as they happen.
// Stamps may run ahead of the window's end by `ahead_slots` slots (further
// ones count in the last of those); values older than the window are
// ignored.
//
// Values are non-negative integers in any unit, bucketed log-linearly:
// exact below 2^sub_bits, then 2^sub_bits buckets per power of two. A
// quantile is reported as its bucket's upper bound, clamped to the largest
// value in the window: never below the window's true quantile, and at most a
// fraction 2^-sub_bits above it.
//
// Thread-safety: none; the owner serializes.
#ifndef TUTTI_DELAYS_WINDOWED_QUANTILE_H_
#define TUTTI_DELAYS_WINDOWED_QUANTILE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "tutti/core/time.h"

namespace tutti {

class WindowedQuantile {
 public:
  struct Options {
    Duration window = 10 * kSecond;
    Duration slot = 100 * kMillisecond;  // REQUIRES: 0 < slot <= window
    int sub_bits = 4;                    // 16 buckets per power of two: within 6.25%
    int64_t max_value = int64_t{1} << 36;  // larger values count as this
    int ahead_slots = 8;
  };

  explicit WindowedQuantile(const Options& options);

  // Records `value` (clamped to [0, max_value]) stamped at instant `at`.
  void Record(Time at, int64_t value);

  // Moves the window to end at `t` (rounded down to a slot boundary).
  // Queries report this window. REQUIRES: t no earlier than a previous
  // Advance's.
  void Advance(Time t);

  // The number of values in the window.
  int64_t count() const { return count_; }
  // The q-quantile (q in [0, 1]) of the window's values: the smallest
  // bucket bound with at least ⌈q·count⌉ values at or below it, clamped to
  // the window's largest value; nullopt when the window is empty.
  std::optional<int64_t> Quantile(double q) const;

  // The same over the window's most recent part: its latest whole slots
  // that together hold at least `min_count` values (all of the window when
  // it holds fewer; min_count <= 0: all). The whole window follows a change
  // only as fast as it slides; its recent part, as soon as enough new values
  // have come. RecentCount() is the number of values that part holds.
  int64_t RecentCount(int64_t min_count) const;
  std::optional<int64_t> RecentQuantile(double q, int64_t min_count) const;

 private:
  struct Slot {
    int64_t index = std::numeric_limits<int64_t>::min();  // the slot number it holds; min: none yet
    int64_t max = 0;
    int64_t total = 0;
    std::vector<uint32_t> counts;  // per bucket
  };
  int Bucket(int64_t value) const;
  int64_t UpperBound(int bucket) const;
  Slot& SlotFor(int64_t index);  // cleared if it held an older slot
  void AddToWindow(const Slot& slot, int sign);
  // The held slot with this index in the window, or null.
  const Slot* Held(int64_t index) const;
  // The first slot of the recent part holding at least `min_count` values.
  int64_t RecentStart(int64_t min_count) const;
  // The q-quantile of `counts` (per bucket, `count` in all), clamped to `max`.
  std::optional<int64_t> QuantileOf(const std::vector<int64_t>& counts, int64_t count, int64_t max, double q) const;

  const Options options_;
  const int64_t window_slots_;
  const int buckets_;
  std::vector<Slot> ring_;        // window_slots_ + ahead_slots slots
  bool started_ = false;          // end_ is set by the first Record or Advance
  int64_t end_ = 0;               // the window is slots [end_ − window_slots_, end_)
  std::vector<int64_t> window_;   // per bucket: counts of the window's slots
  int64_t count_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_DELAYS_WINDOWED_QUANTILE_H_
