#include <sys/prctl.h>

#include <future>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"

namespace tutti {
namespace {

TEST(TimeTest, ConversionsRoundToNearestNanosecond) {
  EXPECT_EQ(Millis(1.053), 1'053'000);
  EXPECT_EQ(Micros(0.0004), 0);
  EXPECT_EQ(Micros(0.0006), 1);
  EXPECT_EQ(Seconds(2), 2 * kSecond);
  EXPECT_DOUBLE_EQ(ToMillis(Millis(25)), 25.0);
}

TEST(ManualClockTest, StartsWhereToldAndOnlyMovesWhenAdvanced) {
  ManualClock clock(100);
  EXPECT_EQ(clock.Now(), 100);
  clock.AdvanceBy(50);
  EXPECT_EQ(clock.Now(), 150);
  clock.AdvanceTo(150);
  EXPECT_EQ(clock.Now(), 150);
}

TEST(ManualClockTest, FiresTimersInTimeThenInsertionOrderWithNowAtTheirInstant) {
  ManualClock clock;
  std::vector<std::string> fired;
  auto record = [&](std::string tag) {
    return [&, tag] { fired.push_back(tag + "@" + std::to_string(clock.Now())); };
  };
  clock.ScheduleAt(30, record("c"));
  clock.ScheduleAt(10, record("a1"));
  clock.ScheduleAt(10, record("a2"));
  clock.ScheduleAt(20, record("b"));
  clock.AdvanceTo(25);
  EXPECT_EQ(fired, (std::vector<std::string>{"a1@10", "a2@10", "b@20"}));
  EXPECT_EQ(clock.Now(), 25);
  clock.AdvanceTo(100);
  EXPECT_EQ(fired.back(), "c@30");
  EXPECT_EQ(clock.pending_timers(), 0u);
}

TEST(ManualClockTest, CancelledTimersNeverRunAndCancelReportsWhetherPending) {
  ManualClock clock;
  int runs = 0;
  TimerId a = clock.ScheduleAt(10, [&] { ++runs; });
  TimerId b = clock.ScheduleAt(20, [&] { ++runs; });
  EXPECT_TRUE(clock.Cancel(a));
  EXPECT_FALSE(clock.Cancel(a));
  EXPECT_FALSE(clock.Cancel(12345));
  clock.AdvanceTo(100);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(clock.Cancel(b));  // already fired
}

TEST(ManualClockTest, CallbacksMayScheduleTimersThatFireInTheSameAdvance) {
  ManualClock clock;
  std::vector<Time> fired;
  clock.ScheduleAt(10, [&] {
    fired.push_back(clock.Now());
    clock.ScheduleAfter(5, [&] { fired.push_back(clock.Now()); });
    clock.ScheduleAfter(500, [&] { fired.push_back(clock.Now()); });
  });
  clock.AdvanceTo(100);
  EXPECT_EQ(fired, (std::vector<Time>{10, 15}));
  EXPECT_EQ(clock.pending_timers(), 1u);
}

TEST(ManualClockTest, PastTimersFireAtCurrentInstant) {
  ManualClock clock(50);
  Time seen = -1;
  clock.ScheduleAt(10, [&] { seen = clock.Now(); });
  clock.AdvanceBy(0);
  EXPECT_EQ(seen, 50);
}

TEST(ManualClockTest, RunNextTimerJumpsToTheEarliestTimer) {
  ManualClock clock;
  std::vector<int> order;
  clock.ScheduleAt(7, [&] { order.push_back(7); });
  clock.ScheduleAt(3, [&] { order.push_back(3); });
  EXPECT_EQ(clock.NextTimerTime(), 3);
  EXPECT_TRUE(clock.RunNextTimer());
  EXPECT_EQ(clock.Now(), 3);
  EXPECT_TRUE(clock.RunNextTimer());
  EXPECT_EQ(clock.Now(), 7);
  EXPECT_FALSE(clock.RunNextTimer());
  EXPECT_EQ(order, (std::vector<int>{3, 7}));
}

TEST(RealClockTest, IsMonotoneAndFiresDueTimersInOrderOnItsThread) {
  RealClock clock;
  const Time t0 = clock.Now();
  EXPECT_LE(t0, clock.Now());
  std::vector<int> order;  // written only on the timer thread
  std::promise<void> done;
  clock.ScheduleAt(t0 - 2, [&] { order.push_back(1); });
  clock.ScheduleAt(t0 - 2, [&] { order.push_back(2); });
  clock.ScheduleAt(t0 - 1, [&] {
    order.push_back(3);
    done.set_value();
  });
  done.get_future().wait();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// The kernel's default timer slack (50 µs) would let every timer fire that
// late; the timer thread asks for none (read on that thread: the slack is
// per thread).
TEST(RealClockTest, ItsThreadWaitsWithoutTimerSlack) {
  RealClock clock;
  std::promise<int> slack;
  clock.ScheduleAfter(0, [&] { slack.set_value(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)); });
  EXPECT_EQ(slack.get_future().get(), 1);
}

TEST(RealClockTest, CancelledFarTimerNeverRunsAndDestructorDropsPendingOnes) {
  bool ran = false;
  {
    RealClock clock;
    TimerId id = clock.ScheduleAfter(3600 * kSecond, [&] { ran = true; });
    clock.ScheduleAfter(3600 * kSecond, [&] { ran = true; });
    EXPECT_TRUE(clock.Cancel(id));
    EXPECT_FALSE(clock.Cancel(id));
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace tutti
