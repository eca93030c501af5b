// EmulatedExecutor: an emulated GPU. A batch of b items of model m takes
// exactly ℓ_m(b) from its latency profile (core/emulated_gpu.h: the timing
// the simulator's GPUs follow too), measured on the injected clock
// with a timer (no CPU is burnt), and returns zeros of the model's output
// size, marked `emulated`. Dozens fit on one small machine, as the papers'
// emulated clusters did. With a memory budget it starts holding no model:
// a load (Executor::Load) makes a model's batches runnable from its end,
// and a batch of a model not loaded, or starting before its load ends,
// fails (FailedPrecondition) — the scheduler's plan broke, and says so.
#ifndef TUTTI_EXECUTORS_EMULATED_EXECUTOR_H_
#define TUTTI_EXECUTORS_EMULATED_EXECUTOR_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/core/clock.h"
#include "tutti/core/emulated_gpu.h"
#include "tutti/core/latency_profile.h"
#include "tutti/executors/executor.h"

namespace tutti {

class EmulatedExecutor final : public Executor {
 public:
  struct Model {
    LatencyProfile profile;
    int64_t output_elements = 0;  // per item
  };

  // `clock` must outlive the executor.
  EmulatedExecutor(Clock* clock, std::vector<Model> models, bool memory_budget = false);

  void Run(ExecBatch batch, DoneFn done) override;
  void Load(const ExecLoad& load) override;
  std::string kind() const override { return "emulated"; }

 private:
  Clock* const clock_;
  const std::vector<Model> models_;
  std::mutex mu_;
  EmulatedGpu gpu_ ABSL_GUARDED_BY(mu_);
  const bool memory_budget_;
  std::vector<Time> ready_at_ ABSL_GUARDED_BY(mu_);  // per model, with a budget: kInfiniteFuture while not held
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_EMULATED_EXECUTOR_H_
