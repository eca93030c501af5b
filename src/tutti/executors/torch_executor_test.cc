#include "tutti/executors/torch_executor.h"

#include <atomic>
#include <future>

#include "gtest/gtest.h"
#include "tutti/core/real_clock.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

std::unique_ptr<TorchExecutor> MakeExecutor(RealClock* clock) {
  ModelRepository repo = *ModelRepository::Open(testing::FixtureRepo());
  std::vector<std::unique_ptr<TorchModel>> models;
  models.push_back(*TorchModel::Load(**repo.Find("linear")));
  return std::make_unique<TorchExecutor>(clock, std::move(models));
}

TEST(TorchExecutorTest, RunsRealModelsOnItsWorker) {
  RealClock clock;
  std::unique_ptr<TorchExecutor> cpu = MakeExecutor(&clock);
  std::promise<ExecResult> result;
  cpu->Run({0, 2, testing::FixtureInputs(2), 0}, [&](ExecResult r) { result.set_value(std::move(r)); });
  ExecResult r = result.get_future().get();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_FALSE(r.emulated);
  EXPECT_LE(r.started, r.finished);
  std::vector<float> expected = testing::FixtureExpectedOutputs();
  ASSERT_EQ(r.output.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(r.output[i], expected[i], 1e-5);
}

// A torch executor does not wait for a batch's planned start (executor.h):
// a batch planned an hour ahead runs now, and reads as ready at its receipt.
TEST(TorchExecutorTest, StartsABatchWhenFreeNotAtItsPlannedStart) {
  RealClock clock;
  std::unique_ptr<TorchExecutor> cpu = MakeExecutor(&clock);
  const Time planned = clock.Now() + 3600 * kSecond;
  std::promise<ExecResult> result;
  cpu->Run({0, 2, testing::FixtureInputs(2), planned}, [&](ExecResult r) { result.set_value(std::move(r)); });
  ExecResult r = result.get_future().get();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_LT(r.finished, planned);
  EXPECT_EQ(r.ready, r.received);  // nothing before it: ready on receipt
  EXPECT_LE(r.ready, r.started);
}

TEST(TorchExecutorTest, ReportsModelErrorsAndFinishesQueuedWorkOnDestruction) {
  RealClock clock;
  std::vector<ExecResult> results;
  {
    std::unique_ptr<TorchExecutor> cpu = MakeExecutor(&clock);
    cpu->Run({0, 2, testing::FixtureInputs(1), 0}, [&](ExecResult r) { results.push_back(std::move(r)); });
    cpu->Run({0, 1, testing::FixtureInputs(1), 0}, [&](ExecResult r) { results.push_back(std::move(r)); });
  }  // the destructor drains the queue; callbacks ran on the worker, in order
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(results[1].status.ok());
}

// Under a memory budget: a model runs only once a load brought it in, a
// batch queued behind its model's load runs after it, an evicted model's
// batches fail, a model held already is not read again, and a failed
// load's error reaches the batches that needed it.
TEST(TorchExecutorTest, UnderABudgetRunsAModelOnlyOnceItsLoadEnds) {
  RealClock clock;
  ModelRepository repo = *ModelRepository::Open(testing::FixtureRepo());
  const ModelVersion linear = **repo.Find("linear");
  std::atomic<int> reads[3] = {0, 0, 0};
  std::promise<void> gate;  // holds model 1's second read back
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<bool> model1_loaded = false;
  auto loader = [&](int k) -> absl::StatusOr<std::unique_ptr<TorchModel>> {
    if (k == 2) return absl::DataLossError("model.pt is truncated");
    if (k == 1 && ++reads[1] == 2) open.wait();
    if (k != 1) ++reads[k];
    auto m = TorchModel::Load(linear);
    if (k == 1) model1_loaded = true;
    return m;
  };
  TorchExecutor cpu(&clock, 3, loader, {1});
  ASSERT_TRUE(cpu.status().ok()) << cpu.status();
  EXPECT_EQ(reads[1], 1);  // warmed up, then freed
  auto run = [&](int model) {
    auto result = std::make_shared<std::promise<ExecResult>>();
    cpu.Run({model, 2, testing::FixtureInputs(2), 0}, [result](ExecResult r) { result->set_value(std::move(r)); });
    return result->get_future();
  };
  EXPECT_EQ(run(0).get().status.code(), absl::StatusCode::kFailedPrecondition);

  cpu.Load({0, 0, 0, {}});
  ExecResult r = run(0).get();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_NEAR(r.output[0], testing::FixtureExpectedOutputs()[0], 1e-5);

  model1_loaded = false;
  cpu.Load({1, 0, 0, {0}});  // evicts model 0
  std::future<ExecResult> waiting = run(1);
  gate.set_value();
  r = waiting.get();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_TRUE(model1_loaded);
  EXPECT_EQ(run(0).get().status.code(), absl::StatusCode::kFailedPrecondition);

  cpu.Load({1, 0, 0, {}});  // held already
  EXPECT_TRUE(run(1).get().status.ok());
  EXPECT_EQ(reads[1], 2);
  EXPECT_EQ(reads[0], 1);

  cpu.Load({2, 0, 0, {}});
  r = run(2).get();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status.message(), "model.pt is truncated");
}

}  // namespace
}  // namespace tutti
