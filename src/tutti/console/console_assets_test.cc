#include "tutti/console/console_assets.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ConsoleAssetsTest, AReportIsOneSelfContainedPageWithItsDataInertInside) {
  const std::string page = ReportPage("<b>run</b>", "sub", "simulation", R"({"models":["a</script><script>x"]})");
  EXPECT_THAT(page, HasSubstr("<title>&lt;b&gt;run&lt;/b&gt;</title>"));
  // The data cannot close its <script> element early.
  EXPECT_THAT(page, HasSubstr(R"("a<\/script><script>x")"));
  EXPECT_THAT(page, HasSubstr(R"({"kind":"simulation","subtitle":"sub","data":)"));
  EXPECT_THAT(page, HasSubstr("uPlot"));
  EXPECT_THAT(page, Not(HasSubstr("{{")));
  EXPECT_THAT(page, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(page, Not(HasSubstr("href=\"http")));
}

TEST(ConsoleAssetsTest, TheConsolePageReadsItsLiveFeed) {
  const std::string page = ConsolePage();
  EXPECT_THAT(page, HasSubstr("new EventSource(\"/console/events\")"));
  EXPECT_THAT(page, Not(HasSubstr("{{")));
}

TEST(ConsoleAssetsTest, WritingAReportToAMissingDirectoryFailsClearly) {
  const absl::Status s = WriteReport("/nonexistent-dir/report.html", "t", "s", "load", "{}");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent-dir/report.html"));
}

}  // namespace
}  // namespace tutti
