#include "tutti/delays/windowed_quantile.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

WindowedQuantile::Options Opts(Duration window = Seconds(1), Duration slot = Millis(100)) {
  WindowedQuantile::Options o;
  o.window = window;
  o.slot = slot;
  return o;
}

TEST(WindowedQuantileTest, EmptyWindowHasNoQuantile) {
  WindowedQuantile w(Opts());
  w.Advance(Seconds(5));
  EXPECT_EQ(w.count(), 0);
  EXPECT_FALSE(w.Quantile(0.5).has_value());
}

TEST(WindowedQuantileTest, EqualValuesGiveThemExactly) {
  WindowedQuantile w(Opts());
  for (int i = 0; i < 50; ++i) w.Record(Millis(10) * i, Millis(3));
  w.Advance(Millis(500));
  EXPECT_EQ(w.count(), 50);
  EXPECT_EQ(w.Quantile(0.999), Millis(3));  // clamped to the largest value
  EXPECT_EQ(w.Quantile(0.0), Millis(3));
}

TEST(WindowedQuantileTest, QuantileIsNeverBelowTheTrueOneAndWithinTheBucketWidth) {
  WindowedQuantile w(Opts(Seconds(10), Millis(100)));
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(1e6), 0.8);
  std::vector<int64_t> values;
  for (int i = 0; i < 20000; ++i) {
    const int64_t v = static_cast<int64_t>(dist(rng));
    values.push_back(v);
    w.Record(Micros(400) * i, v);  // 8 s of samples
  }
  w.Advance(Seconds(8));
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const int64_t truth = values[static_cast<size_t>(std::ceil(q * values.size())) - 1];
    const int64_t estimate = *w.Quantile(q);
    EXPECT_GE(estimate, truth) << q;
    EXPECT_LE(estimate, truth + truth / 16 + 1) << q;  // 16 buckets per power of two
  }
}

TEST(WindowedQuantileTest, TheRecentPartHoldsAtLeastTheAskedCountInWholeSlots) {
  WindowedQuantile w(Opts(Seconds(10), Millis(100)));
  // 5 s of 1 ms values at 1,000/s, then 1 s of 9 ms values at 1,000/s,
  // recorded as they happen.
  for (int i = 0; i < 6000; ++i) {
    const Time at = Millis(1) * i;
    w.Advance(at);
    w.Record(at, i < 5000 ? Millis(1) : Millis(9));
  }
  w.Advance(Seconds(6));
  EXPECT_EQ(w.count(), 6000);
  const auto near_1ms = [](std::optional<int64_t> q) { return q && *q >= Millis(1) && *q <= Millis(1) * 17 / 16; };
  EXPECT_TRUE(near_1ms(w.Quantile(0.5)));  // the whole window: mostly old values
  EXPECT_EQ(w.RecentCount(1000), 1000);    // the last 10 slots hold exactly 1,000
  EXPECT_EQ(w.RecentQuantile(0.5, 1000), Millis(9));
  EXPECT_EQ(w.RecentCount(1050), 1100);  // whole slots: one more slot of 100
  EXPECT_TRUE(near_1ms(w.RecentQuantile(0.05, 1050)));
  // Asking for more than the window holds, or for nothing, is the whole window.
  EXPECT_EQ(w.RecentCount(100000), 6000);
  EXPECT_EQ(w.RecentQuantile(0.5, 100000), w.Quantile(0.5));
  EXPECT_EQ(w.RecentCount(0), 6000);
}

TEST(WindowedQuantileTest, OnlyValuesStampedBeforeTheWindowEndCount) {
  WindowedQuantile w(Opts());
  w.Record(Millis(50), 10);
  w.Record(Millis(150), 20);  // in the slot [100, 200): not before 100 ms
  w.Advance(Millis(100));
  EXPECT_EQ(w.count(), 1);
  EXPECT_EQ(w.Quantile(1.0), 10);
  w.Advance(Millis(199));  // rounds down to the slot boundary: the same window
  EXPECT_EQ(w.count(), 1);
  w.Advance(Millis(200));
  EXPECT_EQ(w.count(), 2);
  EXPECT_EQ(w.Quantile(1.0), 20);
}

TEST(WindowedQuantileTest, OldValuesLeaveTheWindow) {
  WindowedQuantile w(Opts(Seconds(1), Millis(100)));
  w.Record(Millis(10), 1000);  // large, early
  for (int i = 1; i < 10; ++i) {
    w.Advance(Millis(100) * i);
    w.Record(Millis(100) * i + 1, 5);
  }
  w.Advance(Millis(1000));
  EXPECT_EQ(w.count(), 10);
  EXPECT_EQ(w.Quantile(1.0), 1000);
  w.Record(Millis(1001), 5);
  w.Advance(Millis(1100));  // [100, 1100): the early value is gone
  EXPECT_EQ(w.count(), 10);
  EXPECT_EQ(w.Quantile(1.0), 5);
  w.Advance(Seconds(60));  // a long jump: nothing recent
  EXPECT_EQ(w.count(), 0);
}

TEST(WindowedQuantileTest, ValuesStampedAheadCountOnceTheirTimeComes) {
  // A simulator records an answer's delay when it computes it, stamped with
  // the future instant; a server records it then. Both see the same windows.
  WindowedQuantile early(Opts()), on_time(Opts());
  for (int i = 0; i < 8; ++i) early.Record(Millis(100) * i + Millis(30), 100 + i);  // up to 8 slots ahead
  for (int i = 0; i < 12; ++i) {
    early.Advance(Millis(100) * i);
    on_time.Advance(Millis(100) * i);
    if (i < 8) on_time.Record(Millis(100) * i + Millis(30), 100 + i);
    EXPECT_EQ(early.count(), on_time.count()) << i;
    EXPECT_EQ(early.Quantile(0.999), on_time.Quantile(0.999)) << i;
  }
}

TEST(WindowedQuantileTest, ValuesOlderThanTheWindowAreIgnored) {
  WindowedQuantile w(Opts(Seconds(1), Millis(100)));
  w.Advance(Seconds(3));
  w.Record(Seconds(1), 999);
  w.Record(Millis(2500), 7);
  w.Advance(Millis(3100));
  EXPECT_EQ(w.count(), 1);
  EXPECT_EQ(w.Quantile(1.0), 7);
}

}  // namespace
}  // namespace tutti
