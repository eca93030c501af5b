#include "tutti/frontend/delay_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The histogram is Prometheus's: cumulative buckets by `le`, +Inf, _sum
// and _count, for every delay (empty ones too, so that rates start at 0).
TEST(DelayMetricsTest, HistogramsAreCumulativeByBoundWithSumAndCount) {
  DelayReport r;
  DelayHistogram& dispatch = r.histograms[static_cast<int>(Delay::kDispatch)];
  dispatch.counts[0] = 4;   // ≤ 5 µs
  dispatch.counts[3] = 2;   // (20, 50] µs
  dispatch.counts.back() = 1;  // over 100 ms
  dispatch.sum = Millis(150);
  const std::string text = DelayPrometheusText(r, {"m"});
  EXPECT_THAT(text, HasSubstr("# TYPE tutti_delay_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"5e-06\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"2e-05\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"5e-05\"} 6\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"0.1\"} 6\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"+Inf\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_sum{delay=\"dispatch\"} 0.150000000\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_count{delay=\"dispatch\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_bucket{delay=\"response\",le=\"+Inf\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tutti_delay_seconds_count{delay=\"timer\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("tutti_delay_seconds_bucket{delay=\"dispatch\",le=\"0.2\"}")));
}

}  // namespace
}  // namespace tutti
