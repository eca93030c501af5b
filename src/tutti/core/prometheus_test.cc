#include "tutti/core/prometheus.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(PromFamilyTest, WritesTheHelpAndTypeLinesOfTheExpositionFormat) {
  EXPECT_EQ(PromFamily("tutti_x_total", "counter", "Things done."),
            "# HELP tutti_x_total Things done.\n# TYPE tutti_x_total counter\n");
}

TEST(PromHistogramTest, BucketsAreCumulativeWithSumAndCount) {
  PromHistogram h({1, 2});
  h.Observe(0.5);
  h.Observe(1.5);
  h.Observe(5);
  std::string out;
  h.AppendTo(&out, "tutti_h", "model=\"m\"");
  EXPECT_THAT(out, ::testing::HasSubstr("tutti_h_bucket{model=\"m\",le=\"1\"} 1\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("tutti_h_bucket{model=\"m\",le=\"2\"} 2\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("tutti_h_bucket{model=\"m\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("tutti_h_count{model=\"m\"} 3\n"));
  EXPECT_EQ(h.count(), 3);
}

}  // namespace
}  // namespace tutti
