#include "tutti/delays/response_tracker.h"

#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

using Samples = std::vector<ResponseTracker::Sample>;

TEST(ResponseTrackerTest, ABatchGivesOneSampleOnceItsLastAnswerIsWritten) {
  ResponseTracker t;
  Samples out;
  // A batch of 3 ended at 10 ms; deadlines 30, 31, 32 ms: the later answers
  // may leave 1 and 2 ms later than the first.
  const Time end = Millis(10);
  t.Written({7, 3, end}, Millis(10.4), &out);              // 0.4 ms
  t.Written({7, 3, end + Millis(1)}, Millis(12.1), &out);  // 2.1 − 1 = 1.1 ms: the worst
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(t.pending(), 1u);
  t.Written({7, 3, end + Millis(2)}, Millis(12.5), &out);  // 2.5 − 2 = 0.5 ms
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].at, Millis(12.5));
  EXPECT_EQ(out[0].delay, Millis(1.1));
  EXPECT_EQ(t.pending(), 0u);
}

TEST(ResponseTrackerTest, AnswersWithTimeToSpareCountAsNoDelay) {
  ResponseTracker t;
  Samples out;
  t.Written({1, 1, Millis(20)}, Millis(15), &out);  // written before its budget began
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].delay, 0);
}

TEST(ResponseTrackerTest, AnswersOfNoBatchGiveNoSample) {
  ResponseTracker t;
  Samples out;
  t.Written({0, 1, 0}, Millis(5), &out);
  EXPECT_TRUE(out.empty());
}

TEST(ResponseTrackerTest, ABatchWhoseLastAnswersNeverComeGivesItsSampleAfterTheTimeout) {
  ResponseTracker t(kSecond);
  Samples out;
  t.Written({3, 2, Millis(10)}, Millis(11), &out);  // its other answer's client went away
  t.Written({4, 2, Millis(500)}, Millis(501), &out);
  EXPECT_TRUE(out.empty());
  t.Written({5, 1, Millis(1010)}, Millis(1012), &out);  // a second after batch 3's first answer
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].at, Millis(11));  // batch 3, stamped when its answer came
  EXPECT_EQ(out[0].delay, Millis(1));
  EXPECT_EQ(out[1].delay, Millis(2));  // batch 5
  EXPECT_EQ(t.pending(), 1u);          // batch 4 still waits
}

}  // namespace
}  // namespace tutti
