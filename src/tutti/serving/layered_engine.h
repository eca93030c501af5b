// LayeredEngine: an engine layered on another (a graph's steps, a
// sequence's order), which answers through it: by default everything but
// accepting requests is the inner engine's. A layer overrides what it
// adds to (requests between steps, its own counters).
#ifndef TUTTI_SERVING_LAYERED_ENGINE_H_
#define TUTTI_SERVING_LAYERED_ENGINE_H_

#include <cstdint>
#include <vector>

#include "tutti/serving/inference_engine.h"

namespace tutti {

class LayeredEngine : public InferenceEngine {
 public:
  // `inner` must outlive this.
  explicit LayeredEngine(InferenceEngine* inner) : inner_(inner) {}

  void StopAccepting() override { inner_->StopAccepting(); }
  void WaitIdle() override { inner_->WaitIdle(); }
  int64_t in_flight() const override { return inner_->in_flight(); }
  std::vector<ModelCounters> Counters() const override { return inner_->Counters(); }
  std::vector<double> BusyFractions() const override { return inner_->BusyFractions(); }
  std::vector<Duration> BusyTimes() const override { return inner_->BusyTimes(); }
  std::vector<BatchTrace> RecentBatches(Time since) const override { return inner_->RecentBatches(since); }
  Time Now() const override { return inner_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override { inner_->OnAnswerWritten(answer); }
  DelayReport Delays() const override { return inner_->Delays(); }

 protected:
  InferenceEngine* const inner_;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_LAYERED_ENGINE_H_
