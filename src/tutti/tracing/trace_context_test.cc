#include "tutti/tracing/trace_context.h"

#include "gtest/gtest.h"

namespace tutti {
namespace {

constexpr char kExample[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";  // W3C's own

TEST(TraceparentTest, ParsesW3CsExampleAndFormatsItBack) {
  const std::optional<TraceContext> c = ParseTraceparent(kExample);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(TraceIdHex(c->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id, 0x00f067aa0ba902b7u);
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(FormatTraceparent(*c), kExample);
}

TEST(TraceparentTest, TheSampledFlagIsTheLowestBit) {
  EXPECT_FALSE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  EXPECT_FALSE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02")->sampled);
  EXPECT_TRUE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")->sampled);
}

TEST(TraceparentTest, MalformedValuesAreRefused) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // version 00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // a later version, no '-'
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(TraceparentTest, ALaterVersionIsReadByItsFirstFourFields) {
  const std::optional<TraceContext> c =
      ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->span_id, 0x00f067aa0ba902b7u);
}

TEST(TraceIdsTest, NewIdsAreNonZeroAndDiffer) {
  EXPECT_NE(NewTraceId(), TraceId{});
  EXPECT_NE(NewTraceId(), NewTraceId());
  EXPECT_NE(NewSpanId(), 0u);
  EXPECT_EQ(SpanIdHex(0xab).size(), 16u);
}

}  // namespace
}  // namespace tutti
