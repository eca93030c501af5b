// RealClock: steady wall time and a timer thread.
//
// Now() reads std::chrono::steady_clock (nanoseconds since an arbitrary
// origin). Timers run one at a time on a single internal thread, in
// (time, insertion) order, as soon as they are due (the thread asks the
// kernel for no timer slack: a timer fires within a wake-up of its time, not
// up to 50 µs late); a slow callback delays the ones after it, so callbacks
// should be short and hand long work elsewhere.
// The destructor stops the thread; timers still pending are destroyed without
// running.
//
// Thread-safety: all methods are safe to call from any thread, including from
// inside a timer callback.
#ifndef TUTTI_CORE_REAL_CLOCK_H_
#define TUTTI_CORE_REAL_CLOCK_H_

#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "tutti/core/clock.h"
#include "tutti/core/timer_queue.h"

namespace tutti {

class RealClock final : public Clock {
 public:
  RealClock();
  ~RealClock() override;
  RealClock(const RealClock&) = delete;
  RealClock& operator=(const RealClock&) = delete;

  Time Now() const override;
  TimerId ScheduleAt(Time when, Callback callback) override;
  bool Cancel(TimerId id) override;

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_;
  TimerQueue timers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The instant the timer thread sleeps until; the lowest Time while it is
  // awake. A new timer wakes it only if due earlier: most timers are not,
  // and each needless wake-up is a context switch.
  Time sleeping_until_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<Time>::min();
  std::thread thread_;
};

}  // namespace tutti

#endif  // TUTTI_CORE_REAL_CLOCK_H_
