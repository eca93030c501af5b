// TimerGate: how a timer callback (or any callback run on another thread)
// reaches an object that may be destroyed before it runs. The callback
// holds the gate (a shared_ptr) rather than the object; the object closes
// the gate first thing in its destructor, which waits for a callback under
// way to end, and later callbacks find it closed.
//
//   gate_ = std::make_shared<TimerGate<Foo>>(this);
//   clock_->ScheduleAfter(d, [gate = gate_] { gate->Run([](Foo& f) { f.Tick(); }); });
//   ~Foo() { gate_->Close(); … }
//
// Thread-safety: every method may be called from any thread. `fn` runs
// under the gate's lock: it must not close the gate.
#ifndef TUTTI_CORE_TIMER_GATE_H_
#define TUTTI_CORE_TIMER_GATE_H_

#include <mutex>

namespace tutti {

template <typename T>
class TimerGate {
 public:
  explicit TimerGate(T* target) : target_(target) {}

  // Runs fn(target) unless the gate is closed.
  template <typename Fn>
  void Run(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (target_ != nullptr) fn(*target_);
  }
  // From now on Run() runs nothing; returns once a Run() under way ended.
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    target_ = nullptr;
  }

 private:
  std::mutex mu_;
  T* target_;
};

}  // namespace tutti

#endif  // TUTTI_CORE_TIMER_GATE_H_
