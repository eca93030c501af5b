// FakeEngine: an InferenceEngine for the frontend tests, with no scheduler,
// executor or timer of its own, so that what it answers depends only on
// what is submitted — never on how busy the machine is. Each request is
// answered at once, on the submitting thread, as a batch of one run by an
// emulated executor:
//   - output j of an item is (j + 1) × the sum of its inputs, so a test can
//     tell whose answer is whose;
//   - a request whose objective (or, without one, its model's SLO) is
//     shorter than the model's ℓ(1) is dropped with DroppedError, as a
//     scheduler drops what it cannot meet;
//   - it arrives and starts at Now() (the ManualClock given, which the test
//     may advance) and finishes ℓ(1) later: on time;
//   - one whose cancel flag is set then is answered Cancelled, as an engine
//     withdraws it at dispatch.
// BusyFractions() are the `busy` given, so metrics have something to show;
// Delays() reports the compute ratios SetComputeRatio gave (a model's
// batches measured that much slower than its profile), and nothing else.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_TESTING_FAKE_ENGINE_H_
#define TUTTI_TESTING_FAKE_ENGINE_H_

#include <map>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/serving/inference_engine.h"

namespace tutti::testing {

class FakeEngine final : public InferenceEngine {
 public:
  // `clock` must outlive the engine.
  FakeEngine(ClusterSpec spec, std::vector<ModelShape> shapes, ManualClock* clock, std::vector<double> busy = {})
      : spec_(std::move(spec)),
        shapes_(std::move(shapes)),
        clock_(clock),
        busy_(std::move(busy)),
        counters_(spec_.models.size()) {}

  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                      InferenceCallback done) override {
    TUTTI_RETURN_IF_ERROR(CheckSubmission(spec_, shapes_, model, input.size(), objective));
    InferenceOutcome out;
    out.arrival = out.started = clock_->Now();
    out.deadline = DeadlineOf(spec_, model, out.arrival, objective);
    const Duration compute = spec_.models[model].profile.Latency(1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return absl::UnavailableError("the server is shutting down");
      ModelCounters& c = counters_[model];
      if (out.deadline - out.arrival < compute) {
        out.status = DroppedError(spec_, model);
        out.finished = out.arrival;
        ++c.dropped;
      } else {
        out.emulated = true;
        out.finished = out.started + compute;
        out.batch_size = out.batch_answers = 1;
        out.batch_id = next_batch_++;
        out.batch_deadline = out.deadline;
        const float sum = std::accumulate(input.begin(), input.end(), 0.0f);
        for (int64_t j = 0; j < shapes_[model].output_elements; ++j) out.output.push_back((j + 1) * sum);
        ++c.good;
        ++c.batches;
        ++c.batched_requests;
      }
    }
    done(std::move(out));
    return absl::OkStatus();
  }

  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                          Duration objective, InferenceCallback done) override {
    if (context.cancel == nullptr || !context.cancel->Cancelled(clock_->Now())) {
      return InferenceEngine::SubmitWith(model, context, std::move(input), objective, std::move(done));
    }
    TUTTI_RETURN_IF_ERROR(CheckSubmission(spec_, shapes_, model, input.size(), objective));
    InferenceOutcome out;
    out.arrival = out.finished = clock_->Now();
    out.deadline = DeadlineOf(spec_, model, out.arrival, objective);
    out.status = CancelledError(spec_, model);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_[model].cancelled;
    }
    done(std::move(out));
    return absl::OkStatus();
  }

  void StopAccepting() override {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
  }
  void WaitIdle() override {}  // every request is answered before Submit returns
  int64_t in_flight() const override { return 0; }
  std::vector<ModelCounters> Counters() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return counters_;
  }
  std::vector<double> BusyFractions() const override { return busy_; }
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override {
    std::lock_guard<std::mutex> lock(mu_);
    DelayReport r;
    for (const auto& [model, ratio] : ratios_) {
      r.estimates.compute.push_back({.gpu = 0, .model = model, .batches = 1, .ratio = ratio, .scale = ratio});
    }
    return r;
  }
  void SetComputeRatio(ModelId model, double ratio) {
    std::lock_guard<std::mutex> lock(mu_);
    ratios_[model] = ratio;
  }

 private:
  const ClusterSpec spec_;
  const std::vector<ModelShape> shapes_;
  ManualClock* const clock_;
  const std::vector<double> busy_;
  mutable std::mutex mu_;
  std::vector<ModelCounters> counters_ ABSL_GUARDED_BY(mu_);
  std::map<ModelId, double> ratios_ ABSL_GUARDED_BY(mu_);
  uint64_t next_batch_ ABSL_GUARDED_BY(mu_) = 1;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_FAKE_ENGINE_H_
