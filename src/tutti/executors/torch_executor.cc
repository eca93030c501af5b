#include "tutti/executors/torch_executor.h"

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "tutti/core/thread_name.h"

namespace tutti {

TorchExecutor::TorchExecutor(Clock* clock, std::vector<std::unique_ptr<TorchModel>> models)
    : clock_(clock), models_(std::move(models)) {
  std::promise<void> warm;
  worker_ = std::thread([this, &warm] {
    SetThreadName("tutti-torch");
    WarmUp();
    warm.set_value();
    Loop();
  });
  warm.get_future().wait();
}

// libtorch allocates and picks kernels per input shape on a thread's first
// runs: run every model at every batch size the scheduler may form (up to
// its profiles' largest), twice, on the worker thread, so that no request
// meets a cold shape.
void TorchExecutor::WarmUp() {
  std::vector<float> out;
  for (const auto& m : models_) {
    int largest = 1;
    for (const auto& [kind, profile] : m->config().profiles) largest = std::max(largest, profile.max_batch());
    largest = std::min(largest, std::max(1, m->config().max_batch_size));
    for (int pass = 0; pass < 2; ++pass) {
      for (int batch = 1; batch <= largest; ++batch) {
        (void)m->Run(std::vector<float>(batch * m->input_elements()), batch, &out);  // errors show on real batches
      }
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
}

void TorchExecutor::Run(ExecBatch batch, DoneFn done) {
  const Time received = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(batch), std::move(done), received});
  }
  wake_.notify_all();
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
    result.started = clock_->Now();
    TorchModel& m = *models_[batch.model];
    result.status = m.config().model_state_shape.empty()
                        ? m.Run(batch.input, batch.size, &result.output)
                        : m.RunAndUpdate(batch.input, batch.size, batch.state, &result.output, &result.state);
    result.finished = previous_finished = clock_->Now();
    job->done(std::move(result));
  }
}

}  // namespace tutti
