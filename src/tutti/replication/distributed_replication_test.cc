#include "tutti/replication/replicated_executor.h"

#include <algorithm>
#include <thread>

#include "tutti/core/real_clock.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/testing/replication_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// ---- distributed mode: the primary and the backup as two slots ----

// The wire between two slots, run by the test: the primary's messages wait
// until delivered (applied at the backup, then acknowledged) or lost. As
// distributed/replica_node.h does, a backup that took over answers
// "promoted", and the sender stands down.
struct Wire {
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> queued;
  ReplicatedExecutor::SendFn Sender() {
    return [this](uint64_t seq, std::string body) {
      std::lock_guard<std::mutex> lock(mu);
      queued.emplace_back(seq, std::move(body));
    };
  }
  // Delivers the first `n` queued messages (all: -1).
  void Deliver(ReplicatedExecutor& from, ReplicatedExecutor& to, int n = -1) {
    std::vector<std::pair<uint64_t, std::string>> now;
    {
      std::lock_guard<std::mutex> lock(mu);
      const size_t k = n < 0 ? queued.size() : std::min<size_t>(n, queued.size());
      now.assign(queued.begin(), queued.begin() + k);
      queued.erase(queued.begin(), queued.begin() + k);
    }
    for (auto& [seq, body] : now) {
      if (!to.ApplyFromPrimary(body)) return from.Demote();
      from.OnBackupApplied(seq);
    }
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return queued.size();
  }
};

ExecBatch Tagged(ExecBatch b, std::vector<uint64_t> tags) {
  b.tags = std::move(tags);
  return b;
}

void WaitServing(const ReplicatedExecutor& slot) {
  PollOrFail([&] { return slot.serving(); }, "the slot to serve");
}

struct Pair {
  RealClock clock;  // promotions run on threads of their own
  SumExecutor* a_exec;
  SumExecutor* b_exec;
  std::unique_ptr<ReplicatedExecutor> a, b;
  explicit Pair(ReplicationMode mode) {
    ReplicationOptions o{mode};
    o.distributed = true;
    auto pa = std::make_unique<SumExecutor>(&clock);
    auto pb = std::make_unique<SumExecutor>(&clock);
    a_exec = pa.get();
    b_exec = pb.get();
    a = std::make_unique<ReplicatedExecutor>(&clock, std::move(pa), nullptr, std::vector<SlotModel>{kSum}, o);
    b = std::make_unique<ReplicatedExecutor>(&clock, std::move(pb), nullptr, std::vector<SlotModel>{kSum}, o);
  }
  // a serves as the primary, shipping to b through `wire`.
  void Start(Wire& wire) {
    a->Promote();
    WaitServing(*a);
    b->BeginFromPrimary();
    a->AttachBackup(wire.Sender());
  }
};

// The backup (another process's slot) takes over from the states it
// applied and the inputs logged after them; requests of the dead primary
// that come again are answered with the outputs they had, not run twice.
TEST(DistributedReplicationTest, TheBackupTakesOverAndAnswersNoRequestTwice) {
  Pair p(ReplicationMode::kNspb);
  Wire wire;
  Answers a;
  p.Start(wire);
  wire.Deliver(*p.a, *p.b);  // the checkpoint of no state
  p.a->Run(Tagged(Step({1, 2}, {1, 10}, true), {101, 201}), a.Collect());
  wire.Deliver(*p.a, *p.b);  // its log, then its states (sent once the log was in)
  wire.Deliver(*p.a, *p.b);
  a.WaitFor(1);
  p.a->Run(Tagged(Step({1, 2}, {2, 20}), {102, 202}), a.Collect());
  wire.Deliver(*p.a, *p.b);  // the log: its outputs may leave (they read states the backup has)
  a.WaitFor(2);
  EXPECT_EQ(a.results[1].output, (std::vector<float>{3, 30}));
  // The primary dies: its states for the second batch never reach the backup.
  p.a.reset();
  const int runs_before = p.b_exec->runs;
  p.b->Promote();
  WaitServing(*p.b);
  EXPECT_EQ(p.b_exec->runs, runs_before + 1);  // the logged batch whose states it lacked, run again
  // Both batches' requests come again (their answers may not have reached
  // the frontends): the same outputs, from what the backup kept.
  p.b->Run(Tagged(Step({2, 1}, {20, 2}), {202, 102}), a.Collect());
  p.b->Run(Tagged(Step({1}, {1}, true), {101}), a.Collect());
  a.WaitFor(4);
  EXPECT_EQ(a.results[2].output, (std::vector<float>{30, 3}));
  EXPECT_EQ(a.results[3].output, (std::vector<float>{1}));
  EXPECT_EQ(p.b_exec->runs, runs_before + 1);  // nothing ran again
  // The sequences go on from their states: each step counted once.
  p.b->Run(Tagged(Step({1, 2}, {4, 40}), {103, 203}), a.Collect());
  a.WaitFor(5);
  EXPECT_EQ(a.results[4].output, (std::vector<float>{7, 70}));
  EXPECT_EQ(p.b->stats().failovers, 1);
}

// A batch with some requests kept and some new runs only the new ones and
// answers all of them in the batch's order.
TEST(DistributedReplicationTest, KeptAndNewRequestsShareABatch) {
  Pair p(ReplicationMode::kNspb);
  Wire wire;
  Answers a;
  p.Start(wire);
  p.a->Run(Tagged(Step({1}, {5}, true), {11}), a.Collect());
  for (int i = 0; i < 3; ++i) wire.Deliver(*p.a, *p.b);
  a.WaitFor(1);
  p.a.reset();
  p.b->Promote();
  WaitServing(*p.b);
  ExecBatch mixed = Tagged(Step({2, 1}, {7, 5}, true), {21, 11});  // 21 new, 11 kept
  p.b->Run(std::move(mixed), a.Collect());
  a.WaitFor(2);
  EXPECT_EQ(a.results[1].output, (std::vector<float>{7, 5}));
  EXPECT_TRUE(a.results[1].item_status.empty());
  EXPECT_EQ(p.b_exec->runs, 1);  // only request 21's batch
}

// Once promoted, a slot adopts nothing more from the old primary (HAMS
// never lets a backup take a state the primary made after the takeover),
// and the old primary, told so, answers nothing its states made.
TEST(DistributedReplicationTest, APromotedSlotIgnoresTheOldPrimary) {
  Pair p(ReplicationMode::kNspb);
  Wire wire;
  Answers a;
  p.Start(wire);
  p.a->Run(Tagged(Step({1}, {1}, true), {1}), a.Collect());
  for (int i = 0; i < 3; ++i) wire.Deliver(*p.a, *p.b);
  a.WaitFor(1);
  p.b->Promote();  // e.g. the old primary hung and its lease expired
  WaitServing(*p.b);
  p.a->Run(Tagged(Step({1}, {100}), {2}), a.Collect());  // the old primary still runs one
  PollOrFail([&] { return wire.size() >= 1; }, "the old primary's log");
  wire.Deliver(*p.a, *p.b);  // its log: refused, and the old primary stands down
  a.WaitFor(2);
  EXPECT_EQ(a.results[1].status.code(), absl::StatusCode::kUnavailable) << a.results[1].status;
  EXPECT_TRUE(a.results[1].output.empty());
  p.b->Run(Tagged(Step({1}, {2}), {3}), a.Collect());
  a.WaitFor(3);
  EXPECT_EQ(a.results[2].output, (std::vector<float>{3}));  // 1 + 2, not 1 + 100 + 2
}

// A batch under way when the backup attaches: checkpoint-replay logs its
// inputs after the checkpoint (which holds only committed states), so that
// the backup, taking over, replays it and its sequence keeps its state.
TEST(DistributedReplicationTest, CheckpointReplayLogsTheBatchesUnderWayWhenTheBackupAttaches) {
  RealClock clock;
  // The primary's executor holds its batches until released.
  class HeldExecutor final : public Executor {
   public:
    explicit HeldExecutor(Clock* clock) : sum_(clock) {}
    void Run(ExecBatch batch, DoneFn done) override {
      std::lock_guard<std::mutex> lock(mu_);
      held_.emplace_back(std::move(batch), std::move(done));
    }
    std::string kind() const override { return "held"; }
    void Release() {
      std::vector<std::pair<ExecBatch, DoneFn>> now;
      while (now.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        now.swap(held_);
      }
      for (auto& [batch, done] : now) sum_.Run(std::move(batch), std::move(done));
    }

   private:
    SumExecutor sum_;
    std::mutex mu_;
    std::vector<std::pair<ExecBatch, DoneFn>> held_;
  };
  ReplicationOptions o{ReplicationMode::kCheckpoint, /*checkpoint_every=*/1000000};
  o.distributed = true;
  auto held = std::make_unique<HeldExecutor>(&clock);
  HeldExecutor* primary_exec = held.get();
  auto a = std::make_unique<ReplicatedExecutor>(&clock, std::move(held), nullptr, std::vector<SlotModel>{kSum}, o);
  ReplicatedExecutor b(&clock, std::make_unique<SumExecutor>(&clock), nullptr, std::vector<SlotModel>{kSum}, o);
  Wire wire;
  Answers answers;
  a->Promote();
  WaitServing(*a);
  a->Run(Tagged(Step({1}, {5}, true), {1}), answers.Collect());  // under way
  b.BeginFromPrimary();
  a->AttachBackup(wire.Sender());
  primary_exec->Release();
  wire.Deliver(*a, b);
  answers.WaitFor(1);
  a->Run(Tagged(Step({1}, {2}), {2}), answers.Collect());
  primary_exec->Release();
  wire.Deliver(*a, b);
  answers.WaitFor(2);
  EXPECT_EQ(answers.results[1].output, (std::vector<float>{7}));
  a.reset();
  b.Promote();
  WaitServing(b);
  b.Run(Tagged(Step({1}, {3}), {3}), answers.Collect());
  answers.WaitFor(3);
  EXPECT_TRUE(answers.results[2].item_status.empty()) << answers.results[2].item_status[0];
  EXPECT_EQ(answers.results[2].output, (std::vector<float>{10}));  // 5 + 2 + 3: the state replayed
  EXPECT_EQ(b.stats().lost_states, 0);
}

// Remus-style outputs wait for the backup; when the backup goes, they
// leave (the slot serves unreplicated) instead of waiting forever.
TEST(DistributedReplicationTest, LosingTheBackupReleasesWhatWaitedForIt) {
  Pair p(ReplicationMode::kRemus);
  Wire wire;
  Answers a;
  p.Start(wire);
  p.a->Run(Tagged(Step({1}, {4}, true), {1}), a.Collect());
  // Its states' message follows the checkpoint onto the wire once the slot
  // has decided the answer's fate, after any answer it let go.
  PollOrFail([&] { return wire.size() >= 2; }, "the batch's states on the wire");
  {
    std::lock_guard<std::mutex> lock(a.mu);
    EXPECT_TRUE(a.results.empty());  // held for the backup's acknowledgement
  }
  p.a->DetachBackup();
  a.WaitFor(1);
  EXPECT_EQ(a.results[0].output, (std::vector<float>{4}));
  EXPECT_FALSE(p.a->stats().backup);
}

}  // namespace
}  // namespace tutti
