#include "tutti/scheduler/arrival_outlook.h"

#include <random>

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(ArrivalOutlookTest, WithoutEvidenceItExpectsNothing) {
  ArrivalOutlook outlook(8, kSecond, 0);
  EXPECT_EQ(outlook.Expected(0, Millis(90)).arrivals, 0);
  outlook.Arrive(Millis(1));
  EXPECT_EQ(outlook.outstanding(), 1);
  EXPECT_EQ(outlook.Expected(Millis(1), Millis(90)).arrivals, 0);  // nothing seen with one outstanding
}

// An open-loop source sends whatever is outstanding: at every count the
// outlook sees its rate.
TEST(ArrivalOutlookTest, AnOpenLoopStreamIsSeenAtItsRateWhateverIsOutstanding) {
  ArrivalOutlook outlook(16, kSecond, 0);
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> gap(1000);  // 1,000 requests/s
  Time t = 0;
  while (t < Millis(1500)) {
    t += Seconds(gap(rng));
    outlook.Arrive(t);
    // Each waits 5 ms for its answer: about 5 outstanding on average.
    outlook.Dispatch(t, 1, t + Millis(5));
  }
  for (int i = 0; i < 200; ++i) {  // sample the estimate at several counts
    t += Micros(500);
    const double expected = outlook.Expected(t, Millis(10)).arrivals;
    if (outlook.outstanding() <= 8) {
      EXPECT_GT(expected, 6) << "at " << outlook.outstanding() << " outstanding";
      EXPECT_LT(expected, 15) << "at " << outlook.outstanding() << " outstanding";
    }
    outlook.Arrive(t);
    outlook.Dispatch(t, 1, t + Millis(5));
  }
  EXPECT_FALSE(outlook.Closed(t)) << "an open source has no ceiling";
}

// N clients that each send their next request when answered never send
// while all N wait: once the outlook has watched them all waiting for as
// long as the wait in question (90 ms here: 300 of them), it expects nothing
// then, and something while fewer wait.
TEST(ArrivalOutlookTest, ClosedLoopClientsAreExpectedToSendNothingWhileAllOfThemWait) {
  constexpr int kClients = 4;
  ArrivalOutlook outlook(16, kSecond, 0);
  Time t = 0;
  for (int round = 0; round < 600; ++round) {
    // The clients' requests come 50 µs apart; the batch of all four is
    // answered 300 µs after the last.
    for (int c = 0; c < kClients; ++c) {
      t += Micros(50);
      if (c == kClients - 1 && round >= 10) {
        EXPECT_GT(outlook.Expected(t, Millis(90)).arrivals, 1) << "round " << round;  // one more is coming
      }
      outlook.Arrive(t);
    }
    ASSERT_EQ(outlook.outstanding(), kClients);
    if (round >= 20) EXPECT_TRUE(outlook.Closed(t)) << "round " << round;
    if (round >= 300) EXPECT_EQ(outlook.Expected(t, Millis(90)).arrivals, 0) << "round " << round;
    if (round >= 300) EXPECT_EQ(outlook.Expected(t, Millis(1)).arrivals, 0) << "round " << round;
    outlook.Dispatch(t, kClients, t + Micros(300));
    t += Micros(300);
  }
}

// A stream held longer than before reaches a count not watched yet: it is
// expected to keep coming at the rate seen at the counts below.
TEST(ArrivalOutlookTest, ANewCountIsExpectedToSeeTheRateOfTheCountsBelow) {
  ArrivalOutlook outlook(64, kSecond, 0);
  Time t = 0;
  for (int batch = 0; batch < 200; ++batch) {  // batches of 5, one arrival every ms
    for (int i = 0; i < 5; ++i) {
      t += Millis(1);
      outlook.Arrive(t);
    }
    outlook.Dispatch(t, 5, t);
  }
  for (int i = 0; i < 5; ++i) {
    t += Millis(1);
    outlook.Arrive(t);
  }
  t += Millis(1);
  outlook.Arrive(t);  // the sixth: a count never reached
  EXPECT_NEAR(outlook.Expected(t, Millis(10)).arrivals, 10, 1);
}

// At a count not watched long, silence is evidence: the arrivals the counts
// below predict and that do not come make a ceiling (closed-loop clients
// all waiting) likelier than an open source. One client, answered 50 µs
// after it sends and sending 50 µs later, for 150 ms: count 0 is watched
// for the 90 ms wait, count 1 not yet, but 75 ms of it without an arrival
// say enough.
TEST(ArrivalOutlookTest, SilenceAtACountNotWatchedLongReadsAsACeiling) {
  ArrivalOutlook outlook(64, kSecond, 0);
  Time t = 0;
  while (t < Millis(150)) {
    t += Micros(50);
    outlook.Arrive(t);
    outlook.Dispatch(t, 1, t + Micros(50));
    t += Micros(50);
  }
  t += Micros(50);
  outlook.Arrive(t);
  const ArrivalOutlook::Forecast f = outlook.Expected(t, Millis(90));
  EXPECT_LT(f.arrivals, 0.01);
  // Just after the first request, with nothing watched for long, nothing is
  // expected either: no evidence, no wait.
  ArrivalOutlook fresh(64, kSecond, 0);
  fresh.Arrive(Micros(50));
  EXPECT_EQ(fresh.Expected(Micros(50), Millis(90)).arrivals, 0);
}

TEST(ArrivalOutlookTest, ABatchReportedDoneLeavesThenNotAtItsPredictedTime) {
  ArrivalOutlook outlook(8, kSecond, 0);
  outlook.Arrive(0);
  outlook.Arrive(0);
  const uint64_t first = outlook.Dispatch(0, 1, Millis(10));
  const uint64_t second = outlook.Dispatch(0, 1, Millis(10));
  outlook.Answered(Millis(2), first);
  EXPECT_EQ(outlook.outstanding(), 1);
  outlook.Answered(Millis(3), first);  // once only
  EXPECT_EQ(outlook.outstanding(), 1);
  outlook.Arrive(Millis(11));          // the second left at its predicted time
  EXPECT_EQ(outlook.outstanding(), 1);
  outlook.Answered(Millis(12), second);
  EXPECT_EQ(outlook.outstanding(), 1);
}

TEST(ArrivalOutlookTest, DropsLeaveAtOnceAndOldEpochsAreForgotten) {
  ArrivalOutlook outlook(8, kSecond, 0);
  for (int i = 0; i < 100; ++i) {
    const Time t = Millis(i);
    outlook.Arrive(t);
    outlook.Arrive(t);  // a second one while one is outstanding
    outlook.Drop(t);
    outlook.Drop(t);
  }
  EXPECT_EQ(outlook.outstanding(), 0);
  outlook.Arrive(Millis(100));
  EXPECT_GT(outlook.Expected(Millis(100), Millis(10)).arrivals, 0);
  outlook.Drop(Millis(100));
  // Two epochs later nothing recent is left to go by.
  outlook.Arrive(Seconds(3));
  EXPECT_EQ(outlook.Expected(Seconds(3), Millis(10)).arrivals, 0);
}

}  // namespace
}  // namespace tutti
