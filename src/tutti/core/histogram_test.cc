#include "tutti/core/histogram.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(HistogramTest, EmptyIsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Quantile(0.99), 0);
}

TEST(HistogramTest, QuantilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(std::log(2e6), 1.0);  // around 2 ms
  std::vector<Duration> values;
  Histogram h;
  for (int i = 0; i < 100000; ++i) {
    const Duration v = static_cast<Duration>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const Duration exact = values[static_cast<size_t>(q * values.size()) - 1];
    EXPECT_NEAR(static_cast<double>(h.Quantile(q)), static_cast<double>(exact), 0.01 * exact) << q;
  }
  EXPECT_EQ(h.Quantile(1.0), values.back());
  EXPECT_EQ(h.min(), values.front());
}

TEST(HistogramTest, SmallValuesAndMergeAndCounts) {
  Histogram a, b;
  a.Record(100, 3);
  b.Record(Millis(5));
  a.Merge(b);
  EXPECT_EQ(a.count(), 4);
  EXPECT_EQ(a.Quantile(0.5), 103);  // bucket of 8 ns holding 100, clamped
  EXPECT_NEAR(a.Quantile(1.0), Millis(5), Millis(5) / 100);
  EXPECT_DOUBLE_EQ(a.mean(), (300.0 + 5e6) / 4);
}

}  // namespace
}  // namespace tutti
