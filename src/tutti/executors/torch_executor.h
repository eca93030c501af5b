// TorchExecutor: a CPU execution slot running real models with libtorch
// (through TorchModel) on its own worker thread. Batches run one at a time
// in arrival order, each as soon as the worker is free: start_at, the
// scheduler's planned start, is not waited for (executor.h). The injected
// clock only times them; it should be a RealClock (real computation does
// not run in virtual time).
//
// The header is torch-free; libtorch stays inside TorchModel.
#ifndef TUTTI_EXECUTORS_TORCH_EXECUTOR_H_
#define TUTTI_EXECUTORS_TORCH_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"
#include "tutti/models/torch_model.h"

namespace tutti {

class TorchExecutor final : public Executor {
 public:
  // Takes the loaded models (indexed by ExecBatch::model) and warms them up
  // on the worker thread before returning: every batch size up to their
  // profiles' largest, so that the executor is ready only when warm. `clock` must outlive the
  // executor. The destructor finishes queued batches first.
  TorchExecutor(Clock* clock, std::vector<std::unique_ptr<TorchModel>> models);
  ~TorchExecutor() override;

  void Run(ExecBatch batch, DoneFn done) override;
  std::string kind() const override { return "torch"; }

 private:
  void WarmUp();
  void Loop();

  Clock* const clock_;
  std::vector<std::unique_ptr<TorchModel>> models_;
  std::mutex mu_;
  std::condition_variable wake_;
  struct Job {
    ExecBatch batch;
    DoneFn done;
    Time received;
  };
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_TORCH_EXECUTOR_H_
