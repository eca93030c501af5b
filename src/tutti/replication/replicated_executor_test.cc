#include "tutti/replication/replicated_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <condition_variable>
#include <future>
#include <mutex>
#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// A stateful model in its stateless form, run at once on the caller's
// thread: input [x | h0, h1] → output [y | h0 + x, h1 + 1] with y the new
// h0 — a running sum and a step count. With `noise`, each new h0 gets a
// random offset of at most 1e-3 (bits that vary run to run).
class SumExecutor final : public Executor {
 public:
  explicit SumExecutor(Clock* clock, bool noise = false) : clock_(clock), noise_(noise) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    r.received = r.ready = r.started = r.finished = clock_->Now();
    ++runs;
    for (int i = 0; i < batch.size; ++i) {
      const float* in = batch.input.data() + i * 3;
      float h0 = in[1] + in[0];
      if (noise_) h0 += std::uniform_real_distribution<float>(0, 1e-3f)(rng_);
      r.output.insert(r.output.end(), {h0, h0, in[2] + 1});
    }
    done(std::move(r));
  }
  std::string kind() const override { return "sum"; }
  std::atomic<int> runs{0};

 private:
  Clock* const clock_;
  const bool noise_;
  std::mt19937 rng_{std::random_device{}()};
};

const SlotModel kSum{.state_elements = 2, .input_elements = 1, .output_elements = 1, .max_idle = kSecond};

struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ExecResult> results;
  Executor::DoneFn Collect() {
    return [this](ExecResult r) {
      std::lock_guard<std::mutex> lock(mu);
      results.push_back(std::move(r));
      cv.notify_all();
    };
  }
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return results.size() >= n; });
  }
};

ExecBatch Step(std::vector<uint64_t> ids, std::vector<float> xs, bool start = false, bool end = false) {
  ExecBatch b;
  b.size = static_cast<int>(ids.size());
  b.input = std::move(xs);
  for (uint64_t id : ids) b.sequences.push_back({id, start, end});
  return b;
}

struct Slot {
  ManualClock clock;
  SumExecutor* primary;
  SumExecutor* backup;
  std::unique_ptr<ReplicatedExecutor> slot;
  Slot(ReplicationMode mode, bool noise = false, int checkpoint_every = 100) {
    auto p = std::make_unique<SumExecutor>(&clock, noise);
    auto b = std::make_unique<SumExecutor>(&clock, noise);
    primary = p.get();
    backup = b.get();
    slot = std::make_unique<ReplicatedExecutor>(&clock, std::move(p), std::move(b), std::vector<SlotModel>{kSum},
                                                ReplicationOptions{mode, checkpoint_every});
  }
};

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
      for (int i = 0; i < 10000 && !slot.stats().backup; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_TRUE(slot.stats().backup);  // the spare stands by
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
  // first is delivered; the outcome does not depend on it.
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

TEST(ReplicatedExecutorTest, ParsesModes) {
  EXPECT_EQ(*ParseReplicationMode("nspb"), ReplicationMode::kNspb);
  EXPECT_EQ(ReplicationModeName(*ParseReplicationMode("checkpoint")), "checkpoint");
  EXPECT_THAT(ParseReplicationMode("paxos").status().message(), HasSubstr("expected none, nspb, remus or checkpoint"));
}


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
  while (!slot.serving()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
  while (wire.size() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
