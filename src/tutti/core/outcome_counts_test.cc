#include "tutti/core/outcome_counts.h"

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(OutcomeCountsTest, BadIsEveryEndButGood) {
  OutcomeCounts c{.good = 6, .late = 1, .dropped = 2, .error = 1};
  EXPECT_EQ(c.bad(), 4);
  EXPECT_EQ(c.ended(), 10);
  EXPECT_DOUBLE_EQ(c.rate(), 0.4);
  EXPECT_DOUBLE_EQ(OutcomeCounts{}.rate(), 0) << "none ended: nothing bad";
}

TEST(OutcomeCountsTest, SumsAndDifferencesOfRunningTotals) {
  OutcomeCounts total;
  total += {.good = 3, .late = 1};
  const OutcomeCounts then = total;
  total += {.good = 2, .dropped = 4, .error = 1};
  const OutcomeCounts interval = total.Since(then);
  EXPECT_EQ(interval.good, 2);
  EXPECT_EQ(interval.late, 0);
  EXPECT_EQ(interval.dropped, 4);
  EXPECT_EQ(interval.error, 1);
}

}  // namespace
}  // namespace tutti
