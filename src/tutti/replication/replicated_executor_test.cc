#include "tutti/replication/replicated_executor.h"

#include <future>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/testing/replication_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

TEST(ReplicatedExecutorTest, StatesFollowTheirSequencesAndAnswersCarryNoState) {
  Slot s(ReplicationMode::kNspb);
  Answers a;
  s.slot->Run(Step({1, 2}, {1, 10}, /*start=*/true), a.Collect());
  a.WaitFor(1);
  s.slot->Run(Step({2, 1}, {20, 2}), a.Collect());
  a.WaitFor(2);
  s.slot->Run(Step({1}, {3}), a.Collect());
  a.WaitFor(3);
  EXPECT_EQ(a.results[0].output, (std::vector<float>{1, 10}));
  EXPECT_EQ(a.results[1].output, (std::vector<float>{30, 3}));
  EXPECT_EQ(a.results[2].output, (std::vector<float>{6}));
  EXPECT_TRUE(a.results[2].item_status.empty());
  // A start begins again from zeros; an end forgets the state.
  s.slot->Run(Step({1}, {5}, true, /*end=*/true), a.Collect());
  a.WaitFor(4);
  EXPECT_EQ(a.results[3].output, (std::vector<float>{5}));
  EXPECT_EQ(s.slot->stats().live_states, 1);  // sequence 2
}

// A stateful batch's outputs are released once the backup has what the
// mode asks: the answer says when (ExecResult::released, traced as the
// request's "replicate" span); without replication, nothing is stamped.
TEST(ReplicatedExecutorTest, AnswersSayWhenTheirHandOffToTheBackupEnded) {
  for (ReplicationMode mode : {ReplicationMode::kNone, ReplicationMode::kNspb}) {
    SCOPED_TRACE(ReplicationModeName(mode));
    ManualClock clock;
    ReplicatedExecutor slot(&clock, std::make_unique<SumExecutor>(&clock), std::make_unique<SumExecutor>(&clock),
                            {kSum}, ReplicationOptions{.mode = mode, .link_rtt = 3 * kMillisecond});
    Answers a;
    const Time t0 = clock.Now();
    slot.Run(Step({1}, {1}, true), a.Collect());
    clock.AdvanceBy(3 * kMillisecond);
    a.WaitFor(1);
    EXPECT_EQ(a.results[0].finished, t0);
    EXPECT_EQ(a.results[0].released, mode == ReplicationMode::kNone ? t0 : t0 + 3 * kMillisecond);
  }
}

// Hands `slot` a sequence's first step planned to start kPlannedAhead from
// now, and waits for its answer (a.results[0]).
constexpr Duration kPlannedAhead = 2 * kMillisecond;
void RunFirstPlannedAhead(Clock& clock, ReplicatedExecutor& slot, Answers& a) {
  ExecBatch first = Step({1}, {1}, true);
  first.start_at = clock.Now() + kPlannedAhead;
  slot.Run(std::move(first), a.Collect());
  a.WaitFor(1);
}

// The slot is the executor its owner hands batches to: an answer is timed
// from the slot's Run (ExecResult's contract), so what the slot does before
// its primary has the batch reads as a late start (ready → started), not as
// dispatch delay, which the delay model would plan every batch with.
TEST(ReplicatedExecutorTest, AnswersAreTimedFromTheSlotsReceipt) {
  constexpr Duration kLate = 5 * kMillisecond;
  // The primary has each batch kLate after the slot got it.
  class LateExecutor final : public Executor {
   public:
    explicit LateExecutor(Clock* clock) : inner_(clock) {}
    void Run(ExecBatch batch, DoneFn done) override {
      inner_.Run(std::move(batch), [done = std::move(done)](ExecResult r) {
        for (Time* t : {&r.received, &r.ready, &r.started, &r.finished}) *t += kLate;
        done(std::move(r));
      });
    }
    std::string kind() const override { return "late"; }

   private:
    SumExecutor inner_;
  };
  for (ReplicationMode mode : {ReplicationMode::kNone, ReplicationMode::kNspb}) {
    ManualClock clock;
    ReplicatedExecutor slot(&clock, std::make_unique<LateExecutor>(&clock), std::make_unique<LateExecutor>(&clock),
                            {kSum}, ReplicationOptions{mode});
    Answers a;
    const Time t0 = clock.Now();
    RunFirstPlannedAhead(clock, slot, a);
    EXPECT_EQ(a.results[0].received, t0) << ReplicationModeName(mode);
    // The slot's receipt: its primary starts a batch without waiting for
    // start_at (as a torch executor does), so start_at does not count.
    EXPECT_EQ(a.results[0].ready, t0);
    EXPECT_EQ(a.results[0].started, t0 + kLate);
    // The next could start once the first finished, not when the primary had it.
    clock.AdvanceBy(kMillisecond);
    slot.Run(Step({1}, {2}), a.Collect());
    a.WaitFor(2);
    EXPECT_EQ(a.results[1].received, t0 + kMillisecond);
    EXPECT_EQ(a.results[1].ready, t0 + kLate);
    EXPECT_EQ(a.results[1].started, t0 + kMillisecond + kLate);
    EXPECT_EQ(a.results[1].output, (std::vector<float>{3}));
  }
}

// A primary of a kind that waits for start_at (an emulated one) reports
// the wait in its `ready`; the slot keeps it.
TEST(ReplicatedExecutorTest, TheSlotKeepsTheStartItsPrimaryWaitedFor) {
  class WaitingExecutor final : public Executor {
   public:
    explicit WaitingExecutor(Clock* clock) : inner_(clock), clock_(clock) {}
    void Run(ExecBatch batch, DoneFn done) override {
      const Time start = std::max(clock_->Now(), batch.start_at);
      inner_.Run(std::move(batch), [start, done = std::move(done)](ExecResult r) {
        r.ready = r.started = r.finished = start;
        done(std::move(r));
      });
    }
    std::string kind() const override { return "waiting"; }

   private:
    SumExecutor inner_;
    Clock* const clock_;
  };
  for (ReplicationMode mode : {ReplicationMode::kNone, ReplicationMode::kNspb}) {
    ManualClock clock;
    ReplicatedExecutor slot(&clock, std::make_unique<WaitingExecutor>(&clock),
                            std::make_unique<WaitingExecutor>(&clock), {kSum}, ReplicationOptions{mode});
    Answers a;
    const Time t0 = clock.Now();
    RunFirstPlannedAhead(clock, slot, a);
    EXPECT_EQ(a.results[0].received, t0) << ReplicationModeName(mode);
    EXPECT_EQ(a.results[0].ready, t0 + kPlannedAhead);
    EXPECT_EQ(a.results[0].started, t0 + kPlannedAhead);
  }
}

// Run never waits for the slot's lock: a batch that finds it held by a
// reader (here kind(), held open by its primary) is queued, and taken in —
// in the order Run had the batches — on the clock's timer once the reader
// lets go, not on the reader's thread.
TEST(ReplicatedExecutorTest, BatchesRunWhileAReaderHoldsTheSlotStartInOrderOnceItLetsGo) {
  class HeldKindExecutor final : public Executor {
   public:
    explicit HeldKindExecutor(Clock* clock) : inner_(clock) {}
    void Run(ExecBatch batch, DoneFn done) override { inner_.Run(std::move(batch), std::move(done)); }
    std::string kind() const override {
      entered.set_value();
      let_go.wait();
      return "held";
    }
    int runs() const { return inner_.runs; }
    mutable std::promise<void> entered;
    std::shared_future<void> let_go;

   private:
    SumExecutor inner_;
  };
  ManualClock clock;
  auto p = std::make_unique<HeldKindExecutor>(&clock);
  HeldKindExecutor* primary = p.get();
  std::promise<void> let_go;
  primary->let_go = let_go.get_future().share();
  ReplicatedExecutor slot(&clock, std::move(p), std::make_unique<SumExecutor>(&clock), {kSum},
                          ReplicationOptions{ReplicationMode::kNspb});
  std::string kind;
  std::thread reader([&] { kind = slot.kind(); });
  primary->entered.get_future().wait();  // the reader holds the slot's lock

  Answers a;
  auto ran = std::async(std::launch::async, [&] {  // three sequences' first steps
    for (uint64_t id : {1, 2, 3}) slot.Run(Step({id}, {static_cast<float>(id)}, true), a.Collect());
  });
  const bool returned = ran.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "Run waited for the slot's lock";
  EXPECT_EQ(primary->runs(), 0);  // queued: the lock is the reader's

  let_go.set_value();
  reader.join();
  ran.wait();
  EXPECT_EQ(kind, "held");
  EXPECT_EQ(primary->runs(), 0) << "taken in on the reader's thread";

  clock.AdvanceBy(0);  // the clock's timer takes them in
  ASSERT_EQ(a.results.size(), 3u);
  EXPECT_EQ(primary->runs(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.results[i].output, (std::vector<float>{i + 1.0f})) << "in Run's order";
  // Each kept its state: the next steps add to it.
  slot.Run(Step({1}, {10}), a.Collect());
  slot.Run(Step({2}, {5}, false, true), a.Collect());
  ASSERT_EQ(a.results.size(), 5u);
  EXPECT_EQ(a.results[3].output, (std::vector<float>{11}));
  EXPECT_EQ(a.results[4].output, (std::vector<float>{7}));
  EXPECT_EQ(slot.stats().live_states, 2);  // sequence 2 ended
  EXPECT_EQ(slot.stats().queued_batches, 3);  // the last two found the lock free
}

TEST(ReplicatedExecutorTest, BatchingAcrossSequencesGivesTheOutputsOfOneAtATime) {
  std::mt19937 rng(3);
  std::vector<std::vector<float>> xs(6, std::vector<float>(5));
  for (auto& seq : xs) {
    for (float& x : seq) x = std::uniform_int_distribution<int>(0, 9)(rng);
  }
  auto run = [&](bool batched) {
    Slot s(ReplicationMode::kNspb);
    Answers a;
    std::vector<float> out;
    size_t expected = 0;
    for (int step = 0; step < 5; ++step) {
      if (batched) {
        std::vector<uint64_t> ids;
        std::vector<float> in;
        for (int q = 0; q < 6; ++q) {
          ids.push_back(q + 1);
          in.push_back(xs[q][step]);
        }
        s.slot->Run(Step(ids, in, step == 0), a.Collect());
        a.WaitFor(++expected);
        out.insert(out.end(), a.results.back().output.begin(), a.results.back().output.end());
      } else {
        for (int q = 0; q < 6; ++q) {
          s.slot->Run(Step({static_cast<uint64_t>(q + 1)}, {xs[q][step]}, step == 0), a.Collect());
          a.WaitFor(++expected);
          out.push_back(a.results.back().output[0]);
        }
      }
    }
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(ReplicatedExecutorTest, IdleStatesAreForgotten) {
  Slot s(ReplicationMode::kNspb);
  Answers a;
  s.slot->Run(Step({1, 2, 3}, {1, 1, 1}, true), a.Collect());
  a.WaitFor(1);
  EXPECT_EQ(s.slot->stats().live_states, 3);
  s.clock.AdvanceBy(2 * kSecond);
  s.slot->Run(Step({4}, {1}, true), a.Collect());  // sweeps the idle ones
  a.WaitFor(2);
  EXPECT_EQ(s.slot->stats().live_states, 1);
}

TEST(ReplicatedExecutorTest, ParsesModes) {
  EXPECT_EQ(*ParseReplicationMode("nspb"), ReplicationMode::kNspb);
  EXPECT_EQ(ReplicationModeName(*ParseReplicationMode("checkpoint")), "checkpoint");
  EXPECT_THAT(ParseReplicationMode("paxos").status().message(), HasSubstr("expected none, nspb, remus or checkpoint"));
}

}  // namespace
}  // namespace tutti
