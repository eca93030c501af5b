#include "tutti/replication/replicated_executor.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/testing/replication_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Runs `inner` `compute` after each batch arrives, on the manual clock.
class TimedExecutor final : public Executor {
 public:
  TimedExecutor(ManualClock* clock, Duration compute, std::unique_ptr<Executor> inner)
      : clock_(clock), compute_(compute), inner_(std::move(inner)) {}
  void Run(ExecBatch batch, DoneFn done) override {
    auto work = std::make_shared<std::pair<ExecBatch, DoneFn>>(std::move(batch), std::move(done));
    clock_->ScheduleAfter(compute_, [this, work] { inner_->Run(std::move(work->first), std::move(work->second)); });
  }
  std::string kind() const override { return "timed"; }

 private:
  ManualClock* const clock_;
  const Duration compute_;
  const std::unique_ptr<Executor> inner_;
};

constexpr Duration kCompute = 100 * kMicrosecond;
constexpr Duration kLink = 50 * kMicrosecond;

// One sequence of `steps` steps on a primary whose batches take kCompute,
// behind a link of kLink to a backup that computes at once: the answers
// (each driven by the clock's timers), and for each how long it took.
struct LinkRun {
  ManualClock clock;
  std::unique_ptr<ReplicatedExecutor> slot;
  Answers a;
  std::vector<Duration> took;
  explicit LinkRun(ReplicationMode mode, Duration link = kLink) {
    ReplicationOptions o{mode, 100};
    o.detect_after = 0;
    o.link_rtt = link;
    slot = std::make_unique<ReplicatedExecutor>(
        &clock, std::make_unique<TimedExecutor>(&clock, kCompute, std::make_unique<SumExecutor>(&clock, true)),
        std::make_unique<SumExecutor>(&clock, true), std::vector<SlotModel>{kSum}, o);
  }
  void Steps(int from, int to) {
    for (int step = from; step < to; ++step) {
      const Time sent = clock.Now();
      slot->Run(Step({1}, {1}, step == 0), a.Collect());
      while (a.results.size() < static_cast<size_t>(step + 1) && clock.RunNextTimer()) {
      }
      ASSERT_EQ(a.results.size(), static_cast<size_t>(step + 1)) << "step " << step << " never answered";
      took.push_back(clock.Now() - sent);
      EXPECT_NEAR(a.results.back().output[0], step + 1, 0.05) << "step " << step;
    }
  }
};

// HAMS Figure 5: NSPB ships a batch's log and the states it read while it
// computes, so a link shorter than the compute costs its answers nothing;
// Remus holds every answer for its states' transfer.
TEST(ReplicatedExecutorTest, NspbHidesTheLinkBehindComputeAndRemusWaitsForIt) {
  for (ReplicationMode mode : {ReplicationMode::kNone, ReplicationMode::kNspb, ReplicationMode::kRemus}) {
    LinkRun run(mode);
    run.Steps(0, 5);
    const Duration expected = mode == ReplicationMode::kRemus ? kCompute + kLink : kCompute;
    EXPECT_THAT(run.took, ::testing::Each(expected)) << ReplicationModeName(mode);
    EXPECT_EQ(run.slot->stats().held_batches, mode == ReplicationMode::kRemus ? 5 : 0) << ReplicationModeName(mode);
  }
}

// A batch's update stage waits for its own log and for the states it read —
// not for every state shipped before it, as HAMS's does (a model's state
// is one there; a sequence's is its own). Link 150 µs, compute 100 µs:
// each step waits for its log, a step of another sequence sent 10 µs after
// the first is not held for the first one's states, and the first
// sequence's next step reads the state the first made.
TEST(ReplicatedExecutorTest, NspbHoldsABatchForTheStatesItReadNotForOtherSequences) {
  LinkRun run(ReplicationMode::kNspb, 150 * kMicrosecond);
  std::vector<std::pair<Time, float>> answered(3);
  auto at = [&](int i) {
    return [&answered, &run, i](ExecResult r) { answered[i] = {run.clock.Now(), r.output.at(0)}; };
  };
  run.slot->Run(Step({1}, {1}, true), at(0));
  run.clock.AdvanceTo(10 * kMicrosecond);
  run.slot->Run(Step({2}, {1}, true), at(1));
  while (answered[0].first == 0 && run.clock.RunNextTimer()) {
  }
  EXPECT_EQ(answered[0].first, 150 * kMicrosecond);  // its log's delivery
  run.slot->Run(Step({1}, {1}), at(2));
  while (run.clock.RunNextTimer()) {
  }
  EXPECT_EQ(answered[1].first, 160 * kMicrosecond);  // not 300: sequence 1's states are not its
  EXPECT_EQ(answered[2].first, 300 * kMicrosecond);  // its log, and the state it read, at 300
  EXPECT_NEAR(answered[1].second, 1, 0.05);  // sums, with bit noise
  EXPECT_NEAR(answered[2].second, 2, 0.05);
  EXPECT_EQ(run.slot->stats().held_batches, 3);
}

// NSPB makes a batch's states' message once its answers have left, so that
// making it is not on their path (Remus's answers wait for the message
// anyway); the next step of the sequence still reads them.
TEST(ReplicatedExecutorTest, NspbShipsABatchsStatesOnceItsAnswersHaveLeft) {
  for (ReplicationMode mode : {ReplicationMode::kNspb, ReplicationMode::kRemus}) {
    LinkRun run(mode);
    const int64_t before = run.slot->stats().state_bytes;
    int64_t at_answer = -1;
    run.slot->Run(Step({1}, {1}, true), [&, collect = run.a.Collect()](ExecResult r) {
      at_answer = run.slot->stats().state_bytes;
      collect(std::move(r));
    });
    while (at_answer < 0 && run.clock.RunNextTimer()) {
    }
    if (mode == ReplicationMode::kNspb) {
      EXPECT_EQ(at_answer, before);
    } else {
      EXPECT_GT(at_answer, before);
    }
    EXPECT_GT(run.slot->stats().state_bytes, before) << ReplicationModeName(mode);
    run.Steps(1, 4);  // reads it: 2, 3, 4
  }
}

// The primary dies right after an answer, its states still on the link:
// they are lost, and the backup makes them again from the logged inputs —
// from the state that answer read, so the answers after it stay consistent
// with it even when every run gives other bits.
TEST(ReplicatedExecutorTest, StatesStillOnTheLinkWhenThePrimaryDiesAreMadeAgainFromTheLog) {
  LinkRun run(ReplicationMode::kNspb);
  run.Steps(0, 5);
  ASSERT_TRUE(run.slot->KillPrimary().ok());
  run.Steps(5, 10);  // on the backup, which needs no timers
  const ReplicationStats st = run.slot->stats();
  EXPECT_EQ(st.rerun_batches, 1);  // the fifth batch: its log was delivered, its states were not
  EXPECT_EQ(run.a.results.size(), 10u);  // each once
  EXPECT_GT(st.audited, 5);
  EXPECT_EQ(st.inconsistent, 0);
  EXPECT_EQ(st.lost_states, 0);
}

// Remus: the primary dies once a batch's states (with its outputs) are at
// the backup but before it hears so — its answer still held. The backup
// answers it with those outputs: running it again would advance its
// sequence twice.
TEST(ReplicatedExecutorTest, RemusAnswersAHeldBatchWhoseStatesReachedTheBackupWithoutRunningItAgain) {
  LinkRun run(ReplicationMode::kRemus);
  run.Steps(0, 3);
  // The fourth step is computed kCompute after it is sent and its states
  // are at the backup kLink later; this timer, set first, fires before the
  // slot's own at that instant.
  run.clock.ScheduleAt(run.clock.Now() + kCompute + kLink, [&] { ASSERT_TRUE(run.slot->KillPrimary().ok()); });
  run.Steps(3, 8);
  const ReplicationStats st = run.slot->stats();
  EXPECT_EQ(st.failovers, 1);
  EXPECT_EQ(st.rerun_batches, 0);
  EXPECT_EQ(run.a.results.size(), 8u);  // each once
  EXPECT_EQ(st.inconsistent, 0);
  EXPECT_EQ(st.lost_states, 0);
}

// A stateful model with wide inputs and states, run at once on the
// caller's thread: input [x (n floats) | h (m floats)] → output
// [x[0] + h[0] + h[m - 1] | h + x[0]].
class WideExecutor final : public Executor {
 public:
  WideExecutor(int64_t n, int64_t m) : n_(n), m_(m) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    r.output.resize(batch.size * (1 + m_));
    for (int i = 0; i < batch.size; ++i) {
      const float* x = batch.input.data() + i * (n_ + m_);
      const float* h = x + n_;
      float* out = r.output.data() + i * (1 + m_);
      out[0] = x[0] + h[0] + h[m_ - 1];
      for (int64_t j = 0; j < m_; ++j) out[1 + j] = h[j] + x[0];
    }
    done(std::move(r));
  }
  std::string kind() const override { return "wide"; }

 private:
  const int64_t n_, m_;
};

// A states' message copies states of up to 1,024 floats and shares larger
// ones (Outgoing): either way the backup gets them whole.
TEST(ReplicatedExecutorTest, CopiedAndSharedStatesReachTheBackupWhole) {
  for (const int64_t m : {16, 4096}) {
    ManualClock clock;
    ReplicatedExecutor slot(&clock, std::make_unique<WideExecutor>(1, m), std::make_unique<WideExecutor>(1, m),
                            {SlotModel{.state_elements = m, .input_elements = 1, .output_elements = 1,
                                       .max_idle = kSecond}},
                            ReplicationOptions{ReplicationMode::kNspb});
    Answers a;
    slot.Run(Step({1, 2}, {1, 10}, /*start=*/true), a.Collect());
    a.WaitFor(1);
    slot.Run(Step({1, 2}, {2, 20}), a.Collect());
    a.WaitFor(2);
    ASSERT_TRUE(slot.KillPrimary().ok());
    slot.Run(Step({1, 2}, {3, 30}), a.Collect());  // on the backup: states [3 …] and [30 …]
    a.WaitFor(3);
    EXPECT_EQ(a.results[2].output, (std::vector<float>{3 + 3 + 3, 30 + 30 + 30})) << m << " floats";
    EXPECT_EQ(slot.stats().lost_states, 0);
  }
}

// The link to a backup in this process holds at most 64 MiB of messages
// not yet applied: a batch's 36 MiB log waits while the last batch's is
// still on the link (on a manual clock, until the clock moves on), then
// follows it — both reach the backup, and both batches are answered.
TEST(ReplicatedExecutorTest, TheLinkHoldsAtMost64MiBNotYetApplied) {
  constexpr int64_t kInput = 1 << 20;  // floats per item: 4 MiB
  constexpr int kItems = 9;            // a batch's log: 36 MiB
  ManualClock clock;
  ReplicationOptions options{ReplicationMode::kNspb};
  options.link_rtt = kMillisecond;
  ReplicatedExecutor slot(&clock, std::make_unique<WideExecutor>(kInput, 1),
                          std::make_unique<WideExecutor>(kInput, 1),
                          {SlotModel{.state_elements = 1, .input_elements = kInput, .output_elements = 1,
                                     .max_idle = kSecond}},
                          options);
  auto batch = [&](uint64_t first, float x) {
    std::vector<uint64_t> ids(kItems);
    std::iota(ids.begin(), ids.end(), first);
    return Step(ids, std::vector<float>(kItems * kInput, x), /*start=*/true);
  };
  Answers a;
  slot.Run(batch(1, 1), a.Collect());  // its log on the link until the clock moves
  std::thread second([&] { slot.Run(batch(101, 2), a.Collect()); });
  // Only so that the second log is likely posted, or waiting, before the
  // first is delivered; the outcome does not depend on it. No event can
  // replace it: the second Run waits for room inside the slot's lock,
  // where nothing outside can see it.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  clock.AdvanceBy(kMillisecond);
  second.join();
  clock.AdvanceBy(kMillisecond);
  a.WaitFor(2);
  const int64_t log = kItems * kInput * static_cast<int64_t>(sizeof(float));
  const ReplicationStats st = slot.stats();
  EXPECT_GT(st.link_peak_bytes, log);
  EXPECT_LT(st.link_peak_bytes, 2 * log);  // never both logs
  EXPECT_EQ(st.messages, 4);               // two logs, two states' messages
  std::vector<float> outputs;
  for (const ExecResult& r : a.results) outputs.insert(outputs.end(), r.output.begin(), r.output.end());
  std::sort(outputs.begin(), outputs.end());
  std::vector<float> expected(kItems, 1);
  expected.insert(expected.end(), kItems, 2);
  EXPECT_EQ(outputs, expected);
}

}  // namespace
}  // namespace tutti
