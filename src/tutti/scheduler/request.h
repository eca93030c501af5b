// The data-plane vocabulary shared by schedulers, executors and the
// simulator: requests, batches, and the listener a scheduler reports to.
#ifndef TUTTI_SCHEDULER_REQUEST_H_
#define TUTTI_SCHEDULER_REQUEST_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "tutti/core/ids.h"
#include "tutti/core/time.h"

namespace tutti {

// Only metadata travels to the scheduler (Symphony §4.1): the inputs stay
// with the frontend.
struct Request {
  RequestId id = 0;
  ModelId model = 0;
  Time arrival = 0;
  Time deadline = 0;  // the response must reach the client by then
  // Its priority level among its model's requests: 0 is served first
  // (Triton's priority 1). Lower levels wait behind it and are dropped first.
  int level = 0;
  // Triton's DELAY timeout action: from this instant, if still queued, it
  // moves to kDelayedLevel, behind every request of any level not past its
  // own (kInfiniteFuture: never).
  Time delay_at = kInfiniteFuture;
};

// Below every priority level a model may have (Triton allows 16 here).
inline constexpr int kDelayedLevel = 16;

// A batch the scheduler dispatched: `gpu` runs `requests` of `model`
// starting at `exec_at`, expected to take `latency` = ℓ(|requests|).
struct Batch {
  ModelId model = 0;
  GpuId gpu = 0;
  Time exec_at = 0;
  Duration latency = 0;
  std::vector<Request> requests;
};

// A load the scheduler planned (ClusterSpec::memory): at `start`, GPU
// `gpu` frees the weights of `evicted` (none of them has a batch running
// or planned after `start`) and copies in `model`'s, done at start +
// duration; the model's batches there start no earlier.
struct Load {
  GpuId gpu = 0;
  ModelId model = 0;
  Time start = 0;
  Duration duration = 0;
  std::vector<ModelId> evicted;
};

enum class DropReason {
  kDeadline,   // cannot meet its deadline any more (lazy drop)
  kEarlyDrop,  // dropped to keep batches at their target size (Nexus early drop)
  kWithdrawn,  // its owner withdrew it (Scheduler::Withdraw): nobody waits for it
};
absl::string_view DropReasonName(DropReason reason);

// Receives the scheduler's decisions. Every submitted request reaches the
// listener exactly once: inside a dispatched batch or as a drop (a
// withdrawal included).
//
// Calls arrive on the thread that drives the scheduler (the clock's timer
// thread or the caller of Submit) and must not call back into the scheduler.
class SchedulerListener {
 public:
  virtual ~SchedulerListener() = default;
  virtual void OnDispatch(Batch batch) = 0;
  virtual void OnDrop(const Request& request, DropReason reason) = 0;
  // Only with a memory budget: a load and the evictions it needs, before
  // any batch that relies on them.
  virtual void OnLoad(const Load& load) {}
};

// A listener that forwards to functions (an owner's private handlers);
// loads go nowhere without `on_load`.
class CallbackListener final : public SchedulerListener {
 public:
  using DropFunction = std::function<void(const Request&, DropReason)>;
  CallbackListener(std::function<void(Batch)> on_dispatch, DropFunction on_drop,
                   std::function<void(const Load&)> on_load = nullptr)
      : on_dispatch_(std::move(on_dispatch)), on_drop_(std::move(on_drop)), on_load_(std::move(on_load)) {}
  // For owners that take every drop alike.
  CallbackListener(std::function<void(Batch)> on_dispatch, std::function<void(const Request&)> on_drop)
      : CallbackListener(std::move(on_dispatch), [f = std::move(on_drop)](const Request& r, DropReason) { f(r); }) {}
  void OnDispatch(Batch batch) override { on_dispatch_(std::move(batch)); }
  void OnDrop(const Request& request, DropReason reason) override { on_drop_(request, reason); }
  void OnLoad(const Load& load) override {
    if (on_load_) on_load_(load);
  }

 private:
  std::function<void(Batch)> on_dispatch_;
  DropFunction on_drop_;
  std::function<void(const Load&)> on_load_;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_REQUEST_H_
