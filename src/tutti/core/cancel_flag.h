// CancelFlag: whether anyone still waits for a request, shared between
// whoever holds its answer (a frontend) and the engine that runs it.
#ifndef TUTTI_CORE_CANCEL_FLAG_H_
#define TUTTI_CORE_CANCEL_FLAG_H_

#include <atomic>

#include "tutti/core/time.h"

namespace tutti {

// Whether anyone still waits for a request: cancelled when its client went
// away or cancelled, or once its timeout (Triton's `timeout` parameter)
// has passed. An engine that sees it set before the request joins a batch
// answers it Cancelled instead of running it; one already in a batch runs
// to the end. Thread-safe.
class CancelFlag {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  // The engine's clock time after which the request is withdrawn.
  void ExpireAt(Time at) { expires_.store(at, std::memory_order_relaxed); }
  // Cancel() was called, or `now` is past the expiry.
  bool Cancelled(Time now) const {
    return cancelled_.load(std::memory_order_relaxed) || now > expires_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> cancelled_{false};
  std::atomic<Time> expires_{kInfiniteFuture};
};

}  // namespace tutti

#endif  // TUTTI_CORE_CANCEL_FLAG_H_
