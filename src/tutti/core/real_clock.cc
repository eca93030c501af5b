#include "tutti/core/real_clock.h"

#include <sys/prctl.h>

#include <chrono>
#include <utility>

#include "tutti/core/thread_name.h"

namespace tutti {

RealClock::RealClock() : thread_([this] {
  SetThreadName("tutti-clock");
  // Linux lets a thread's timed waits end up to its timer slack late
  // (50 µs by default), to merge wake-ups; the scheduler's timers release
  // executors and dispatch batches, so that slack landed on every step of
  // every answer. The server's event loop waits on a timerfd, which has
  // none; this thread now has none either (1 ns: 0 would restore the
  // default). Best effort: a kernel that refuses keeps the default.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  Loop();
}) {}

RealClock::~RealClock() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Time RealClock::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TimerId RealClock::ScheduleAt(Time when, Callback callback) {
  TimerId id;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = timers_.Add(when, std::move(callback));
    if (when < sleeping_until_) {
      sleeping_until_ = when;
      wake = true;
    }
  }
  if (wake) wake_.notify_one();
  return id;
}

bool RealClock::Cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  return timers_.Cancel(id);
}

void RealClock::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (auto due = timers_.PopDue(Now())) {
      lock.unlock();
      due->callback();
      lock.lock();
      continue;
    }
    const std::optional<Time> next = timers_.NextTime();
    if (!next) {
      sleeping_until_ = std::numeric_limits<Time>::max();
      wake_.wait(lock);
    } else {
      sleeping_until_ = *next;
      const auto deadline = std::chrono::steady_clock::time_point(
          std::chrono::nanoseconds(*next));
      wake_.wait_until(lock, deadline);
    }
    sleeping_until_ = std::numeric_limits<Time>::min();
  }
}

}  // namespace tutti
