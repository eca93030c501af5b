#include "tutti/net/event_loop.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <mutex>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

namespace net = boost::asio;

// Runs `f` on the loop's thread 0 (where its timers run) and waits for it
// and for what it posted there (the loop's Arm).
void RunOnLoop(EventLoop& loop, const std::function<void()>& f) {
  std::promise<void> done;
  net::post(loop.context(0), [&] {
    f();
    net::post(loop.context(0), [&] { done.set_value(); });
  });
  done.get_future().wait();
}

TEST(EventLoopTest, TimersRunInTimeOrderNeverEarlyAndCancelledOnesNever) {
  EventLoop loop(2, "loop-test");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> offset_us(0, 20000);
  struct Ran {
    int index;
    Time at;
  };
  std::mutex mu;
  std::vector<Ran> ran;
  std::vector<Time> when;
  std::vector<TimerId> ids;
  std::promise<void> last;
  // Added in one handler on the timers' thread, so that none runs before
  // all are in (a preempted test thread would otherwise add a timer after
  // a later one had run).
  RunOnLoop(loop, [&] {
    const Time start = loop.Now();
    for (int i = 0; i < 40; ++i) {
      // Some share an instant: those run in the order they were added.
      when.push_back(start + Micros(i % 5 == 0 ? 10000 : offset_us(rng)));
      ids.push_back(loop.ScheduleAt(when.back(), [&, i] {
        std::lock_guard<std::mutex> lock(mu);
        ran.push_back({i, loop.Now()});
      }));
    }
    // Cancel every fourth, the earliest among them too.
    for (int i = 0; i < 40; i += 4) EXPECT_TRUE(loop.Cancel(ids[i]));
    EXPECT_FALSE(loop.Cancel(ids[0])) << "a timer is cancelled once";
    loop.ScheduleAt(start + Micros(30000), [&] { last.set_value(); });
  });
  last.get_future().wait();

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(ran.size(), 30u);
  for (size_t k = 0; k < ran.size(); ++k) {
    const int i = ran[k].index;
    EXPECT_NE(i % 4, 0) << "timer " << i << " was cancelled";
    EXPECT_GE(ran[k].at, when[i]) << "timer " << i << " ran early";
    if (k > 0) {
      const int prev = ran[k - 1].index;
      EXPECT_TRUE(when[prev] < when[i] || (when[prev] == when[i] && prev < i))
          << "timer " << prev << " ran before " << i;
    }
  }
}

TEST(EventLoopTest, MovingTheEarliestTimerWithinAHandlerSetsTheOsTimerOnce) {
  EventLoop loop(1, "loop-test");
  const Time far = loop.Now() + 60 * kSecond;
  TimerId id = kNoTimer;
  RunOnLoop(loop, [&] { id = loop.ScheduleAt(far, [] {}); });
  const int64_t armed = loop.timer_arms();
  EXPECT_GE(armed, 1);

  // A scheduler moves a model's timer on every arrival (Cancel, then Add):
  // many moves in one handler re-arm once, for where the timer ends up.
  Time last = 0;
  RunOnLoop(loop, [&] {
    for (int i = 0; i < 100; ++i) {
      EXPECT_TRUE(loop.Cancel(id));
      last = far - kSecond + i * kMillisecond;
      id = loop.ScheduleAt(last, [] {});
    }
  });
  EXPECT_EQ(loop.timer_arms(), armed + 1);

  // Moved away and back to the instant the OS timer waits for: no re-arm.
  RunOnLoop(loop, [&] {
    EXPECT_TRUE(loop.Cancel(id));
    id = loop.ScheduleAt(last, [] {});
  });
  EXPECT_EQ(loop.timer_arms(), armed + 1);

  // From another thread too; and the moved timer still runs, once, on time.
  std::promise<Time> fired;
  const Time soon = loop.Now() + 5 * kMillisecond;
  EXPECT_TRUE(loop.Cancel(id));
  loop.ScheduleAt(soon, [&] { fired.set_value(loop.Now()); });
  EXPECT_GE(fired.get_future().get(), soon);
  EXPECT_EQ(loop.timer_arms(), armed + 2);
}

}  // namespace
}  // namespace tutti
