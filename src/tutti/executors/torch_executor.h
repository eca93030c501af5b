// TorchExecutor: a CPU execution slot running real models with libtorch
// (through TorchModel) on its own worker thread. Batches run one at a time
// in arrival order, each as soon as the worker is free: start_at, the
// scheduler's planned start, is not waited for (executor.h). The injected
// clock only times them; it should be a RealClock (real computation does
// not run in virtual time).
//
// Under a memory budget (the second constructor) it starts holding no
// model: Load() queues a load the scheduler planned, which a loader thread
// carries out beside the worker (as a GPU's copy engine beside its
// compute): it frees the evicted models' weights, then reads the model's
// from disk. A batch of a model whose load is queued or under way waits
// for it; a batch of a model not loaded, or whose load failed, fails
// (FailedPrecondition, or the load's error).
//
// The header is torch-free; libtorch stays inside TorchModel.
#ifndef TUTTI_EXECUTORS_TORCH_EXECUTOR_H_
#define TUTTI_EXECUTORS_TORCH_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
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

  // Reads model `index`'s weights (TorchModel::Load of its version).
  using ModelLoader = std::function<absl::StatusOr<std::unique_ptr<TorchModel>>(int index)>;
  // Under a memory budget: `num_models` models, none held. Before
  // returning it loads each of `warm_up` in turn, warms it up as above and
  // frees it again: one of each architecture is enough, as libtorch's warm
  // state is per shape, not per weights. Errors of those loads are
  // returned by `status()`.
  TorchExecutor(Clock* clock, int num_models, ModelLoader loader, const std::vector<int>& warm_up);
  ~TorchExecutor() override;

  void Run(ExecBatch batch, DoneFn done) override;
  void Load(const ExecLoad& load) override;
  // OK, or why warming up a model to be loaded failed.
  absl::Status status() const { return warm_up_status_; }
  std::string kind() const override { return "torch"; }

 private:
  static void WarmUp(TorchModel& m);
  void Start(const std::vector<int>& warm_up);
  void Loop();
  void LoaderLoop();
  // The model to run a batch of `model` with, once no load of it is
  // pending (`waited`: one was); null with `why` set when it is not held.
  std::shared_ptr<TorchModel> AwaitModel(int model, absl::Status* why, bool* waited);

  Clock* const clock_;
  const ModelLoader loader_;  // null: every model held from the start
  absl::Status warm_up_status_;
  std::mutex mu_;
  std::condition_variable wake_;
  // A batch's model is shared with the worker running it, so that an
  // eviction frees the weights only after the batch.
  std::vector<std::shared_ptr<TorchModel>> models_ ABSL_GUARDED_BY(mu_);
  std::vector<int> pending_loads_ ABSL_GUARDED_BY(mu_);      // per model: loads queued or under way
  std::vector<absl::Status> load_errors_ ABSL_GUARDED_BY(mu_);  // per model: its last load's
  std::deque<ExecLoad> loads_ ABSL_GUARDED_BY(mu_);
  std::condition_variable loaded_;
  struct Job {
    ExecBatch batch;
    DoneFn done;
    Time received;
  };
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
  std::thread load_worker_;  // under a budget only
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_TORCH_EXECUTOR_H_
