// Test support for the frontends: a model "mlp" (input "image" [1, 2, 2] →
// output "logits" [3], max batch 8, ℓ(1) = 1.1 ms, objective one second)
// behind an InferenceFrontend over a FakeEngine (testing/fake_engine.h):
// every request is answered at once, with outputs computed from its inputs
// (item output j = (j + 1) × the sum of its inputs), and dropped when its
// objective is under ℓ(1) — so no test depends on how fast the machine is.
#ifndef TUTTI_TESTING_FRONTEND_FIXTURE_H_
#define TUTTI_TESTING_FRONTEND_FIXTURE_H_

#include <memory>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/testing/fake_engine.h"

namespace tutti::testing {

class FakeEngineFrontendTest : public ::testing::Test {
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
    engine_ = std::make_unique<FakeEngine>(spec, std::vector<ModelShape>{{4, 3}}, &clock_,
                                           std::vector<double>{0.25, 0.5});
    frontend_ = std::make_unique<InferenceFrontend>(engine_.get(),
                                                    std::vector<InferenceFrontend::ServedModel>{{config_, 1}});
  }
  // Call first in a subclass's TearDown, before stopping its listener.
  void StopEngine() {
    engine_->StopAccepting();
    engine_->WaitIdle();
  }

  ManualClock clock_;
  ModelConfig config_;
  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<InferenceFrontend> frontend_;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_FRONTEND_FIXTURE_H_
