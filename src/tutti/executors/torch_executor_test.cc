#include "tutti/executors/torch_executor.h"

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

}  // namespace
}  // namespace tutti
