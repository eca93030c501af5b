#include "tutti/replication/replicated_executor.h"

#include <atomic>

#include "tutti/core/real_clock.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/testing/replication_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Runs `steps` steps of sequences 1 … `sequences` (x = 1 each step), the
// primary killed after `kill_after` steps; returns the last outputs.
std::vector<ExecResult> RunWithFailover(Slot& s, int sequences, int steps, int kill_after) {
  Answers a;
  size_t expected = 0;
  for (int step = 0; step < steps; ++step) {
    if (step == kill_after) {
      EXPECT_TRUE(s.slot->KillPrimary().ok());
    }
    for (int q = 1; q <= sequences; ++q) {
      s.slot->Run(Step({static_cast<uint64_t>(q)}, {1}, step == 0), a.Collect());
      a.WaitFor(++expected);
    }
  }
  return std::vector<ExecResult>(a.results.end() - sequences, a.results.end());
}

TEST(ReplicatedExecutorTest, NspbFailoverKeepsEveryStateAndStaysConsistentWithNondeterminism) {
  Slot s(ReplicationMode::kNspb, /*noise=*/true);
  const std::vector<ExecResult> last = RunWithFailover(s, 4, 20, 10);
  for (const ExecResult& r : last) {
    ASSERT_TRUE(r.status.ok());
    EXPECT_TRUE(r.item_status.empty());
    EXPECT_NEAR(r.output[0], 20, 0.05);  // the sum of 20 ones: no step lost or repeated
  }
  const ReplicationStats st = s.slot->stats();
  EXPECT_EQ(st.failovers, 1);
  EXPECT_GT(st.audited, 60);
  EXPECT_EQ(st.inconsistent, 0);
  EXPECT_GT(st.messages, 0);
  EXPECT_GT(s.backup->runs.load(), 0);  // the backup serves now
}

TEST(ReplicatedExecutorTest, RemusFailoverKeepsEveryState) {
  Slot s(ReplicationMode::kRemus, true);
  for (const ExecResult& r : RunWithFailover(s, 3, 12, 5)) EXPECT_NEAR(r.output[0], 12, 0.05);
  EXPECT_EQ(s.slot->stats().inconsistent, 0);
}

TEST(ReplicatedExecutorTest, CheckpointReplayDivergesOnlyWhenTheModelIsNondeterministic) {
  Slot deterministic(ReplicationMode::kCheckpoint, false, /*checkpoint_every=*/12);  // 3 steps
  for (const ExecResult& r : RunWithFailover(deterministic, 4, 20, 11)) EXPECT_FLOAT_EQ(r.output[0], 20);
  EXPECT_EQ(deterministic.slot->stats().inconsistent, 0);
  EXPECT_GT(deterministic.slot->stats().rerun_batches, 0);  // replayed from the checkpoint

  Slot noisy(ReplicationMode::kCheckpoint, true, 12);
  RunWithFailover(noisy, 4, 20, 11);
  EXPECT_GT(noisy.slot->stats().inconsistent, 0);  // replayed states are not the ones answers read
}

TEST(ReplicatedExecutorTest, WithoutReplicationLostStatesAreExplicitErrors) {
  Slot s(ReplicationMode::kNone);
  const std::vector<ExecResult> last = RunWithFailover(s, 2, 6, 3);
  for (const ExecResult& r : last) {
    ASSERT_EQ(r.item_status.size(), 1u);
    EXPECT_EQ(r.item_status[0].code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(r.item_status[0].message(), HasSubstr("was lost with its executor"));
  }
  EXPECT_GT(s.slot->stats().lost_states, 0);
}

// A compute-then-update model: its state s (empty: 0) answers each item x
// with s + x, then becomes s + Σx plus a small offset that differs between
// executors (`replica` 0, 1, …): replaying its updates elsewhere does not
// reproduce the bits.
class CounterExecutor final : public Executor {
 public:
  explicit CounterExecutor(int replica) : offset_(1e-4f * static_cast<float>(replica + 1)) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    const float s = batch.state.empty() ? 0 : batch.state[0];
    float next = s;
    for (float x : batch.input) {
      r.output.push_back(s + x);
      next += x;
    }
    r.state = {next + offset_};
    done(std::move(r));
  }
  std::string kind() const override { return "counter"; }

 private:
  const float offset_;
};

// 30 batches of 4 ones, the primary killed before batch 15: the last
// answer, and the slot's stats.
std::pair<float, ReplicationStats> RunCounter(ReplicationMode mode) {
  ManualClock clock;
  ReplicatedExecutor slot(&clock, std::make_unique<CounterExecutor>(0), std::make_unique<CounterExecutor>(1),
                          {SlotModel{.input_elements = 1, .output_elements = 1, .model_state = true}},
                          ReplicationOptions{mode, 100});
  Answers a;
  for (int b = 0; b < 30; ++b) {
    if (b == 15) {
      EXPECT_TRUE(slot.KillPrimary().ok());
    }
    ExecBatch batch;
    batch.size = 4;
    batch.input = {1, 1, 1, 1};
    slot.Run(std::move(batch), a.Collect());
    a.WaitFor(b + 1);
  }
  return {a.results.back().output[0], slot.stats()};
}

TEST(ReplicatedExecutorTest, ComputeThenUpdateModelsKeepTheirStateThroughAFailover) {
  const auto [last, nspb] = RunCounter(ReplicationMode::kNspb);
  EXPECT_NEAR(last, 4 * 29 + 1, 0.05);  // 29 batches' updates, none lost or repeated
  EXPECT_EQ(nspb.inconsistent, 0);
  EXPECT_GT(nspb.audited, 20);
  const auto [replayed, checkpoint] = RunCounter(ReplicationMode::kCheckpoint);
  EXPECT_NEAR(replayed, 4 * 29 + 1, 0.05);
  EXPECT_GT(checkpoint.inconsistent, 0);  // the replayed updates are not the ones answers read
}

TEST(ReplicatedExecutorTest, ASpareBecomesTheNewBackupAndASecondFailureLosesNothing) {
  ManualClock clock;
  std::atomic<int> spares{0};
  ReplicatedExecutor slot(
      &clock, std::make_unique<SumExecutor>(&clock, true), std::make_unique<SumExecutor>(&clock, true), {kSum},
      ReplicationOptions{ReplicationMode::kNspb, 100}, [&]() -> absl::StatusOr<std::unique_ptr<Executor>> {
        ++spares;
        return std::make_unique<SumExecutor>(&clock, true);
      });
  Answers a;
  size_t expected = 0;
  for (int step = 0; step < 30; ++step) {
    if (step == 10 || step == 20) {
      ASSERT_TRUE(slot.KillPrimary().ok()) << "step " << step;
      PollOrFail([&] { return slot.stats().backup; }, "the spare to stand by");
    }
    for (uint64_t q = 1; q <= 3; ++q) {
      slot.Run(Step({q}, {1}, step == 0), a.Collect());
      a.WaitFor(++expected);
    }
  }
  for (size_t i = expected - 3; i < expected; ++i) EXPECT_NEAR(a.results[i].output[0], 30, 0.1);
  const ReplicationStats st = slot.stats();
  EXPECT_EQ(st.failovers, 2);
  EXPECT_EQ(spares.load(), 2);
  EXPECT_EQ(st.inconsistent, 0);
  EXPECT_EQ(st.lost_states, 0);
}

// On the real clock (the detector's failover runs on a thread of its own,
// which a ManualClock does not allow); only the outcome is asserted.
TEST(ReplicatedExecutorTest, TheDetectorFindsAHungPrimaryAndTheBackupAnswersItsBatch) {
  RealClock clock;
  ReplicatedExecutor slot(&clock, std::make_unique<SumExecutor>(&clock), std::make_unique<SumExecutor>(&clock), {kSum},
                          ReplicationOptions{.mode = ReplicationMode::kNspb, .detect_after = 20 * kMillisecond});
  Answers a;
  for (int step = 0; step < 5; ++step) {
    slot.Run(Step({1}, {1}, step == 0), a.Collect());
    a.WaitFor(step + 1);
  }
  EXPECT_EQ(slot.stats().failovers, 0);  // a primary that answers is never declared dead
  slot.HangPrimary();
  slot.Run(Step({1}, {1}), a.Collect());  // the primary never answers it; the backup will
  a.WaitFor(6);
  EXPECT_FLOAT_EQ(a.results[5].output[0], 6);  // run on the state of step 5
  const ReplicationStats st = slot.stats();
  EXPECT_EQ(st.failovers, 1);
  EXPECT_GE(st.detection_time, 20 * kMillisecond);  // never before the limit
  EXPECT_EQ(st.inconsistent, 0);
}

}  // namespace
}  // namespace tutti
