#include "tutti/net/event_loop.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/thread_name.h"
#include "tutti/core/timer_queue.h"

namespace tutti {

namespace net = boost::asio;

// The timers live in a TimerQueue; one asio timer, on thread 0, is armed for
// the earliest of them. Firing runs every due timer in order, then re-arms.
class EventLoop::Impl {
 public:
  Impl(int threads, const std::string& name) {
    for (int i = 0; i < std::max(1, threads); ++i) {
      contexts_.push_back(std::make_unique<Context>());
    }
    timer_ = std::make_unique<net::steady_timer>(contexts_[0]->ioc);
    for (int i = 0; i < static_cast<int>(contexts_.size()); ++i) {
      threads_.emplace_back([this, i, name] {
        SetThreadName(absl::StrCat(name, "-", i));
        contexts_[i]->ioc.run();
      });
    }
  }
  ~Impl() { Stop(); }

  int size() const { return static_cast<int>(contexts_.size()); }
  net::io_context& context(int i) { return contexts_.at(i)->ioc; }
  net::io_context& Next() { return contexts_[next_++ % contexts_.size()]->ioc; }

  void Stop() {
    if (threads_.empty()) return;
    for (auto& c : contexts_) {
      c->work.reset();
      c->ioc.stop();
    }
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  static Time Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  TimerId Add(Time when, Callback callback) {
    TimerId id;
    bool earlier;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = timers_.Add(when, std::move(callback));
      earlier = when < armed_for_;
      if (earlier) {
        armed_for_ = when;
        earlier = RequestArmLocked();
      }
    }
    if (earlier) PostArm();
    return id;
  }

  // A cancelled timer that was the earliest re-arms the asio timer, so
  // that it does not wake the loop for nothing.
  bool Cancel(TimerId id) {
    bool post;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!timers_.Cancel(id)) return false;
      if (timers_.NextTime().value_or(kInfiniteFuture) <= armed_for_) return true;
      armed_for_ = kInfiniteFuture;
      post = RequestArmLocked();
    }
    if (post) PostArm();
    return true;
  }

  int64_t arms() const { return arms_.load(std::memory_order_relaxed); }

 private:
  // On thread 0.
  void Fire() {
    for (;;) {
      std::optional<TimerQueue::Due> due;
      {
        std::lock_guard<std::mutex> lock(mu_);
        due = timers_.PopDue(Now());
      }
      if (!due) break;
      due->callback();
    }
    Arm();
  }

  // The earliest timer changed: one Arm, posted unless one already is —
  // moving a timer (Cancel, then Add) and the timers a handler moves
  // together re-arm once, when the handler is done.
  bool RequestArmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (arm_posted_) return false;
    arm_posted_ = true;
    return true;
  }
  void PostArm() { net::post(contexts_[0]->ioc, [this] { Arm(); }); }

  // On thread 0: (re)arms the asio timer for the earliest pending timer,
  // unless it already waits for that instant. Each re-arm aborts the
  // pending wait and resets the OS timer (timerfd_settime).
  void Arm() {
    std::optional<Time> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      arm_posted_ = false;
      next = timers_.NextTime();
      armed_for_ = next.value_or(kInfiniteFuture);
    }
    const Time want = next.value_or(kInfiniteFuture);
    if (want == waiting_for_) return;
    waiting_for_ = want;
    const uint64_t wait = ++wait_;
    if (!next) {
      timer_->cancel();
      return;
    }
    arms_.fetch_add(1, std::memory_order_relaxed);
    timer_->expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*next)));
    timer_->async_wait([this, wait](const boost::system::error_code& ec) {
      if (wait == wait_) waiting_for_ = kInfiniteFuture;  // this wait is over
      if (!ec) Fire();  // operation_aborted: re-armed meanwhile
    });
  }

  struct Context {
    net::io_context ioc{1};
    net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(ioc);
  };
  std::vector<std::unique_ptr<Context>> contexts_;
  std::atomic<size_t> next_{0};
  std::unique_ptr<net::steady_timer> timer_;  // on thread 0
  std::mutex mu_;
  TimerQueue timers_ ABSL_GUARDED_BY(mu_);
  Time armed_for_ ABSL_GUARDED_BY(mu_) = kInfiniteFuture;  // what timer_ waits for, or is about to
  bool arm_posted_ ABSL_GUARDED_BY(mu_) = false;           // an Arm is posted and has not run
  // On thread 0: the instant timer_'s pending wait is for (kInfiniteFuture:
  // none), and which of Arm's waits that is.
  Time waiting_for_ = kInfiniteFuture;
  uint64_t wait_ = 0;
  std::atomic<int64_t> arms_{0};
  std::vector<std::thread> threads_;   // last: they start once the rest is built
};

EventLoop::EventLoop(int threads, const std::string& name) : impl_(std::make_unique<Impl>(threads, name)) {}
EventLoop::~EventLoop() = default;

int EventLoop::threads() const { return impl_->size(); }
net::io_context& EventLoop::context(int i) { return impl_->context(i); }
net::io_context& EventLoop::NextContext() { return impl_->Next(); }
void EventLoop::Stop() { impl_->Stop(); }
Time EventLoop::Now() const { return Impl::Now(); }
TimerId EventLoop::ScheduleAt(Time when, Callback callback) { return impl_->Add(when, std::move(callback)); }
bool EventLoop::Cancel(TimerId id) { return impl_->Cancel(id); }
int64_t EventLoop::timer_arms() const { return impl_->arms(); }

}  // namespace tutti
