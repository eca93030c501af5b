// EmulatedExecutor: an emulated GPU. A batch of b items of model m takes
// exactly ℓ_m(b) from its latency profile (core/emulated_gpu.h: the timing
// the simulator's GPUs follow too), measured on the injected clock
// with a timer (no CPU is burnt), and returns zeros of the model's output
// size, marked `emulated`. Dozens fit on one small machine, as the papers'
// emulated clusters did.
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
  EmulatedExecutor(Clock* clock, std::vector<Model> models);

  void Run(ExecBatch batch, DoneFn done) override;
  std::string kind() const override { return "emulated"; }

 private:
  Clock* const clock_;
  const std::vector<Model> models_;
  std::mutex mu_;
  EmulatedGpu gpu_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_EMULATED_EXECUTOR_H_
