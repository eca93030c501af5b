#include "tutti/core/serialized_clock.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

// Whether another thread holds `mu` now (asked from a thread of its own:
// try_lock on a mutex the caller holds is undefined).
bool HeldElsewhere(std::mutex& mu) {
  bool held = false;
  std::thread([&] {
    held = !mu.try_lock();
    if (!held) mu.unlock();
  }).join();
  return held;
}

TEST(SerializedClockTest, CallbacksRunUnderTheMutexThenAfterRunsUnlocked) {
  ManualClock base;
  std::vector<std::string> log;
  SerializedClock* self = nullptr;
  SerializedClock clock(
      &base,
      [&] { log.push_back(HeldElsewhere(self->mu()) ? "after locked" : "after unlocked"); },
      [&](Time due) { log.push_back("fire due " + std::to_string(due)); });
  self = &clock;
  clock.ScheduleAt(Millis(5),
                   [&] { log.push_back(HeldElsewhere(clock.mu()) ? "callback locked" : "callback unlocked"); });
  EXPECT_EQ(clock.Now(), 0);
  base.AdvanceTo(Millis(10));
  EXPECT_EQ(clock.Now(), Millis(10));
  EXPECT_EQ(log, (std::vector<std::string>{"fire due " + std::to_string(Millis(5)), "callback locked",
                                           "after unlocked"}));
}

TEST(SerializedClockTest, ATimerSetForThePastIsDueWhenItWasSet) {
  ManualClock base;
  base.AdvanceTo(Millis(20));
  Time seen = -1;
  SerializedClock clock(&base, {}, [&](Time due) { seen = due; });
  clock.ScheduleAt(Millis(3), [] {});
  base.AdvanceBy(Millis(1));
  EXPECT_EQ(seen, Millis(20));
}

TEST(SerializedClockTest, CancelledTimersDoNotRun) {
  ManualClock base;
  int runs = 0;
  SerializedClock clock(&base);
  const TimerId id = clock.ScheduleAt(Millis(5), [&] { ++runs; });
  EXPECT_TRUE(clock.Cancel(id));
  base.AdvanceTo(Millis(10));
  EXPECT_EQ(runs, 0);
}

TEST(SerializedClockTest, AfterCloseTimersDoNothingEvenOnceTheClockIsGone) {
  ManualClock base;
  int runs = 0, afters = 0;
  {
    SerializedClock clock(&base, [&] { ++afters; });
    clock.ScheduleAt(Millis(5), [&] { ++runs; });
    std::unique_lock<std::mutex> lock(clock.mu());
    clock.Close(lock);
    EXPECT_TRUE(lock.owns_lock());
  }
  base.AdvanceTo(Millis(10));  // the pending timer outlives its clock
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(afters, 0);
}

}  // namespace
}  // namespace tutti
