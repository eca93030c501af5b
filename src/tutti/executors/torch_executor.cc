#include "tutti/executors/torch_executor.h"

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "tutti/core/thread_name.h"

namespace tutti {

TorchExecutor::TorchExecutor(Clock* clock, std::vector<std::unique_ptr<TorchModel>> models) : clock_(clock) {
  for (auto& m : models) models_.push_back(std::move(m));
  Start({});
}

TorchExecutor::TorchExecutor(Clock* clock, int num_models, ModelLoader loader, const std::vector<int>& warm_up)
    : clock_(clock), loader_(std::move(loader)) {
  models_.resize(num_models);
  Start(warm_up);
  load_worker_ = std::thread([this] {
    SetThreadName("tutti-load");
    LoaderLoop();
  });
}

void TorchExecutor::Start(const std::vector<int>& warm_up) {
  std::vector<std::shared_ptr<TorchModel>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held = models_;
    pending_loads_.assign(models_.size(), 0);
    load_errors_.assign(models_.size(), absl::OkStatus());
  }
  std::promise<void> warm;
  worker_ = std::thread([this, &warm, &warm_up, &held] {
    SetThreadName("tutti-torch");
    for (const auto& m : held) {
      if (m != nullptr) WarmUp(*m);
    }
    for (int k : warm_up) {
      absl::StatusOr<std::unique_ptr<TorchModel>> m = loader_(k);
      if (!m.ok()) {
        warm_up_status_ = m.status();
        break;
      }
      WarmUp(**m);
    }
    warm.set_value();
    Loop();
  });
  warm.get_future().wait();
}

// libtorch allocates and picks kernels per input shape on a thread's first
// runs: run the model at every batch size the scheduler may form (up to
// its profiles' largest), twice, on the worker thread, so that no request
// meets a cold shape.
void TorchExecutor::WarmUp(TorchModel& m) {
  std::vector<float> out;
  int largest = 1;
  for (const auto& [kind, profile] : m.config().profiles) largest = std::max(largest, profile.max_batch());
  largest = std::min(largest, std::max(1, m.config().max_batch_size));
  for (int pass = 0; pass < 2; ++pass) {
    for (int batch = 1; batch <= largest; ++batch) {
      (void)m.Run(std::vector<float>(batch * m.input_elements()), batch, &out);  // errors show on real batches
    }
  }
}

TorchExecutor::~TorchExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
  if (load_worker_.joinable()) load_worker_.join();
}

void TorchExecutor::Run(ExecBatch batch, DoneFn done) {
  const Time received = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(batch), std::move(done), received});
  }
  wake_.notify_all();
}

void TorchExecutor::Load(const ExecLoad& load) {
  if (loader_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_loads_[load.model];
    loads_.push_back(load);
  }
  wake_.notify_all();
}

void TorchExecutor::LoaderLoop() {
  for (;;) {
    ExecLoad load;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !loads_.empty(); });
      if (loads_.empty()) return;  // stopping, every load done
      load = std::move(loads_.front());
      loads_.pop_front();
      for (int e : load.evicted) models_[e].reset();  // a batch running it holds its own reference
      if (models_[load.model] != nullptr) {           // held already: loaded once
        --pending_loads_[load.model];
        loaded_.notify_all();
        continue;
      }
    }
    absl::StatusOr<std::unique_ptr<TorchModel>> m = loader_(load.model);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (m.ok()) {
        models_[load.model] = *std::move(m);
        load_errors_[load.model] = absl::OkStatus();
      } else {
        load_errors_[load.model] = m.status();
      }
      --pending_loads_[load.model];
    }
    loaded_.notify_all();
  }
}

std::shared_ptr<TorchModel> TorchExecutor::AwaitModel(int model, absl::Status* why, bool* waited) {
  std::unique_lock<std::mutex> lock(mu_);
  *waited = pending_loads_[model] > 0;
  loaded_.wait(lock, [&] { return pending_loads_[model] == 0; });
  if (models_[model] == nullptr) {
    *why = !load_errors_[model].ok()
               ? load_errors_[model]
               : absl::FailedPreconditionError("the model's weights are not loaded on this executor");
  }
  return models_[model];
}

void TorchExecutor::Loop() {
  Time previous_finished = 0;
  for (;;) {
    std::optional<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const ExecBatch& batch = job->batch;
    // Starts now, not at batch.start_at (executor.h): the batch is formed,
    // and its planned start only kept a margin for its hand-off.
    ExecResult result;
    result.received = job->received;
    result.ready = std::max(job->received, previous_finished);
    bool waited = false;
    const std::shared_ptr<TorchModel> m = AwaitModel(batch.model, &result.status, &waited);
    if (waited) result.ready = std::max(result.ready, clock_->Now());  // a wait for its load is no lag
    result.started = clock_->Now();
    if (m != nullptr) {
      result.status = m->config().model_state_shape.empty()
                          ? m->Run(batch.input, batch.size, &result.output)
                          : m->RunAndUpdate(batch.input, batch.size, batch.state, &result.output, &result.state);
    }
    result.finished = previous_finished = clock_->Now();
    job->done(std::move(result));
  }
}

}  // namespace tutti
