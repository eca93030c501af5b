// EventLoop: a few threads, each running its own Boost.Asio io_context, and
// a Clock whose timers run on the first of them.
//
// The HTTP server serves its connections on a loop; `tutti serve` also
// gives the loop's clock to its serving core and emulated executors. Then
// the scheduler's timers, a batch's end, its answers and their writes to
// the clients all happen on threads that are awake anyway — no hand-off to
// a timer thread and back, each of which costs a wake-up, and on a busy or
// virtualized machine sometimes milliseconds (what the delay model would
// then have to plan for).
//
// One io_context per thread, not one shared by all: what a thread starts
// (a connection's reads and writes) it finishes, without waking another
// thread or contending for a shared queue — on a small virtual machine that
// halves the CPU a request costs. Connections are spread over the threads.
//
// Clock: Now() is steady wall time (as RealClock's). Timers run one at a
// time, in (time, insertion) order, on thread 0, as soon as they are due; a
// slow callback delays the ones after it (and thread 0's connections), so
// callbacks should be short. Stop() (or the
// destructor) joins the threads; timers still pending are destroyed
// without running.
//
// Thread-safety: every method may be called from any thread, including
// from a timer callback or a handler on the loop.
#ifndef TUTTI_NET_EVENT_LOOP_H_
#define TUTTI_NET_EVENT_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "tutti/core/clock.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace tutti {

class EventLoop final : public Clock {
 public:
  // Starts `threads` (at least 1) threads named "<name>-<i>".
  explicit EventLoop(int threads, const std::string& name = "tutti-loop");
  ~EventLoop() override;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  int threads() const;
  // Thread i's io_context (0 <= i < threads()).
  boost::asio::io_context& context(int i = 0);
  // The io_contexts in turn, for spreading connections.
  boost::asio::io_context& NextContext();
  // Stops running handlers and timers and joins the threads. Idempotent.
  void Stop();

  Time Now() const override;
  TimerId ScheduleAt(Time when, Callback callback) override;
  bool Cancel(TimerId id) override;

  // How many times the loop has set its OS timer for a new instant (a
  // statistic: moving the earliest timer costs a re-arm; moving it several
  // times within one handler, or back to the instant armed, costs one or none).
  int64_t timer_arms() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tutti

#endif  // TUTTI_NET_EVENT_LOOP_H_
