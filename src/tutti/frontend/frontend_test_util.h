// Test support for the frontends: a model "mlp" (input "image" [1, 2, 2] →
// output "logits" [3], max batch 8) on two emulated GPUs with
// ℓ(b) = 0.1 ms · b + 1 ms and a default objective of one second, on the
// real clock, behind an InferenceFrontend. The eager policy runs a request
// as soon as a GPU is free, so that only a hiccup of most of a second — not
// a timer a few milliseconds late on a busy machine — could make one late.
#ifndef TUTTI_FRONTEND_FRONTEND_TEST_UTIL_H_
#define TUTTI_FRONTEND_FRONTEND_TEST_UTIL_H_

#include <memory>

#include "gtest/gtest.h"
#include "tutti/core/real_clock.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/serving/inference_core.h"

namespace tutti::testing {

class EmulatedFrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.name = "mlp";
    config_.platform = Platform::kBuiltin;
    config_.architecture = "mlp";
    config_.max_batch_size = 8;
    config_.inputs = {{"image", DataType::kFp32, {1, 2, 2}}};
    config_.outputs = {{"logits", DataType::kFp32, {3}}};
    ClusterSpec spec;
    spec.models = {{"mlp", *LatencyProfile::Linear(Micros(100), Millis(1), 8), kSecond}};
    spec.gpus = 2;
    std::vector<std::unique_ptr<Executor>> executors;
    for (int g = 0; g < 2; ++g) {
      executors.push_back(std::make_unique<EmulatedExecutor>(
          &clock_, std::vector<EmulatedExecutor::Model>{{spec.models[0].profile, 3}}));
    }
    InferenceCore::Options options;
    options.policy = "eager";
    core_ = *InferenceCore::Create(spec, {{4, 3}}, std::move(executors), options, &clock_);
    frontend_ = std::make_unique<InferenceFrontend>(core_.get(),
                                                    std::vector<InferenceFrontend::ServedModel>{{config_, 1}});
  }
  // Call first in a subclass's TearDown, before stopping its listener.
  void StopCore() {
    core_->StopAccepting();
    core_->WaitIdle();
  }

  RealClock clock_;
  ModelConfig config_;
  std::unique_ptr<InferenceCore> core_;
  std::unique_ptr<InferenceFrontend> frontend_;
};

}  // namespace tutti::testing

#endif  // TUTTI_FRONTEND_FRONTEND_TEST_UTIL_H_
