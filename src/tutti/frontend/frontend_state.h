// InferenceFrontend's per-model state and its variants' monitor, shared by
// the files that implement it (inference_frontend.cc: requests and model
// control; task_routing.cc: model-less tasks; frontend_metrics.cc: stats
// and Prometheus exposition). Internal to frontend/.
#ifndef TUTTI_FRONTEND_FRONTEND_STATE_H_
#define TUTTI_FRONTEND_FRONTEND_STATE_H_

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/core/prometheus.h"

namespace tutti {

struct InferenceFrontend::ModelState {
  ServedModel served;
  std::atomic<int64_t> rejected{0};    // refused before scheduling (bad input)
  std::atomic<int64_t> overloaded{0};  // refused by admission control (queue full)
  std::atomic<int64_t> queued{0};      // items accepted and not yet answered
  // Of those, by scheduler level (0 first), for the levels whose queue
  // policy has a max_queue_size.
  std::array<std::atomic<int64_t>, kMaxPriorityLevels> level_queued{};
  // Model control: kReady, kUnloading (until queued is 0), kUnavailable.
  // Changed under control_mu; read without it.
  enum Control { kReady, kUnloading, kUnavailable };
  std::atomic<int> control{kReady};
  std::mutex control_mu;
  std::vector<std::function<void(absl::Status)>> unloading;  // waiting for the drain
  // Over answered items: arrival → batch start, batch start → finish, and
  // the size of the batch each ran in.
  PromHistogram queue_seconds{PromHistogram::SecondsBounds()};
  PromHistogram compute_seconds{PromHistogram::SecondsBounds()};
  PromHistogram batch_size{PromHistogram::BatchBounds()};
  PromHistogram latency_seconds{PromHistogram::LatencyBounds()};  // arrival → finish
  // Statistics (Triton's), per request.
  struct AtomicSum {
    std::atomic<int64_t> count{0}, ns{0};
    void Add(Duration d) {
      ++count;
      ns += d;
    }
    Statistics::Summed Load() const { return {count.load(), ns.load()}; }
  };
  AtomicSum success, fail, queue, compute_infer;
  std::atomic<int64_t> inference_count{0};
  // Σ 1 / batch size over answered items: the batches they ran in, a batch
  // shared with other models (a prefix group) counted by their share.
  std::atomic<double> executions{0};
  std::atomic<int64_t> last_inference_ms{0};
};

struct InferenceFrontend::VariantMonitor {
  std::mutex mu;
  Time at ABSL_GUARDED_BY(mu) = -1;  // the last observation (-1: none yet)
  std::vector<int64_t> given ABSL_GUARDED_BY(mu);  // per model, up to `at`
  std::vector<VariantStatus> status ABSL_GUARDED_BY(mu);
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_FRONTEND_STATE_H_
