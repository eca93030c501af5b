#include "tutti/scheduler/batch_policy.h"

#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

// Symphony §3.3: ℓ(b) = b + 5 time units (here ms), SLO 12.
ModelSpec ExampleModel() {
  ModelSpec m;
  m.name = "example";
  m.profile = *LatencyProfile::Linear(Millis(1), Millis(5), 32);
  m.slo = Millis(12);
  return m;
}

Request At(RequestId id, double arrival_ms, const ModelSpec& m) {
  return Request{id, 0, Millis(arrival_ms), Millis(arrival_ms) + m.slo};
}

struct Dropped {
  std::vector<RequestId> ids;
  DropFn Fn() {
    return [this](const Request& r, DropReason) { ids.push_back(r.id); };
  }
};

TEST(BatchPolicyTest, DeferredWaitsForFrontrunThenGoesAtTheFourthRequest) {
  ModelSpec m = ExampleModel();
  RequestQueue q;
  Dropped dropped;
  for (int i = 0; i < 3; ++i) q.push_back(At(i + 1, 0.75 * i, m));
  BatchContext ctx{Millis(1.5), Millis(1.5), &m, {}, DropPolicy::kLazy};
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 3);
  EXPECT_EQ(c.exec_at, Millis(12 - 9));  // frontrun = d − ℓ(4)
  EXPECT_EQ(c.latest_dispatch, Millis(12 - 8));

  q.push_back(At(4, 2.25, m));
  ctx.now = ctx.gpu_free = Millis(2.25);
  c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.exec_at, Millis(2.25));       // frontrun 2 has passed
  EXPECT_EQ(c.latest_dispatch, Millis(3));  // the paper's "latest is t = 3"
  EXPECT_TRUE(dropped.ids.empty());
}

TEST(BatchPolicyTest, FrontrunSlackDispatchesEarlier) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m)};
  Dropped dropped;
  BatchContext ctx{0, 0, &m, {}, DropPolicy::kLazy, Millis(0.5)};
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.exec_at, Millis(12 - 7 - 0.5));  // frontrun d − ℓ(2), minus the slack
  EXPECT_EQ(c.latest_dispatch, Millis(12 - 6));
}

TEST(BatchPolicyTest, TheHeadGuardDispatchesSmallBatchesEarlyEnoughForALateTimer) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m)};
  Dropped dropped;
  BatchContext ctx{0, 0, &m, {}, DropPolicy::kLazy, Millis(0.5)};
  ctx.head_guard = Millis(3);
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.exec_at, Millis(12 - 6 - 3));  // d − ℓ(1) − guard, before d − ℓ(2) − slack
  // A batch of four can shrink if its timer is late: plain frontrun.
  q = {At(1, 0, m), At(2, 0, m), At(3, 0, m), At(4, 0, m)};
  c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.exec_at, Millis(12 - 10 - 0.5));  // d − ℓ(5) − slack
}

TEST(BatchPolicyTest, TheComputePlanScalesTheProfileAndAddsItsTail) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m)};
  Dropped dropped;
  // L(b) = 1.5·(b + 5) + 0.5: L(1) = 9.5 ms, L(2) = 11 ms.
  BatchContext ctx{0, 0, &m, {}, DropPolicy::kLazy, 0, ComputePlan{1.5, 1.5, Millis(0.5)}};
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 1);
  EXPECT_EQ(c.exec_at, Millis(12 - 11));           // frontrun d − L(2)
  EXPECT_EQ(c.latest_dispatch, Millis(12 - 9.5));  // d − L(1)
  // Twice as slow, the head fits only without the tail (2·ℓ(1) = 12 ms):
  // not dropped, but sent at once.
  ctx.compute = ComputePlan{2, 2, Millis(1)};
  c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 1);
  EXPECT_EQ(c.exec_at, 0);
  EXPECT_TRUE(dropped.ids.empty());
  // 2.5 times as slow it is hopeless: dropped.
  ctx.compute = ComputePlan{2.5, 2.5, 0};
  c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(c.size, 0);
  EXPECT_EQ(dropped.ids, (std::vector<RequestId>{1}));
}

TEST(BatchPolicyTest, HeadsThatFitOnlyTheTypicalCaseAreSentAtOnceNotDropped) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m), At(2, 0, m)};
  Dropped dropped;
  const NetworkDelays floors;             // configured: none
  NetworkDelays measured{0, 0, Millis(2)};  // the tail grew: 2 ms of response
  BatchContext ctx{Millis(5), Millis(5), &m, measured, DropPolicy::kLazy};
  ctx.floor_delays = &floors;
  // At 5 ms ℓ(1) + 2 ms no longer fits the 12 ms deadline; ℓ(2) = 7 ms does
  // without the response tail.
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_TRUE(dropped.ids.empty());
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.exec_at, Millis(5));
  EXPECT_EQ(c.latest_dispatch, Millis(5));
  // Past ℓ(1) before the deadline, hopeless: dropped.
  ctx.now = ctx.gpu_free = Millis(6.5);
  c = ComputeCandidate(BatchPolicyKind::kDeferred, &q, ctx, dropped.Fn());
  EXPECT_EQ(dropped.ids, (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(c.size, 0);
}

TEST(BatchPolicyTest, EagerRunsWhateverFitsNow) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m), At(2, 0.75, m)};
  Dropped dropped;
  Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &q,
                                 {Millis(1), Millis(1), &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.exec_at, Millis(1));
}

TEST(BatchPolicyTest, BatchIsLimitedByTheHeadsDeadlineAndGpuFreeTime) {
  ModelSpec m = ExampleModel();
  RequestQueue q;
  for (int i = 0; i < 10; ++i) q.push_back(At(i, 0, m));
  Dropped dropped;
  // At t = 0 with a GPU free at 4: 4 + ℓ(b) <= 12 → b = 3.
  Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &q,
                                 {0, Millis(4), &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(c.size, 3);
  EXPECT_EQ(c.exec_at, Millis(4));
}

TEST(BatchPolicyTest, LazyDropRemovesOnlyHopelessHeads) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m), At(2, 3, m)};
  Dropped dropped;
  // At t = 7, R1 (deadline 12) cannot finish: 7 + ℓ(1) = 13 > 12.
  Candidate c = ComputeCandidate(BatchPolicyKind::kDeferred, &q,
                                 {Millis(7), Millis(7), &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(dropped.ids, (std::vector<RequestId>{1}));
  EXPECT_EQ(c.size, 1);
  EXPECT_EQ(q.front().id, 2u);
}

TEST(BatchPolicyTest, EarlyDropKeepsTheWindowFull) {
  ModelSpec m = ExampleModel();
  m.early_drop_window = 4;
  RequestQueue q;
  for (int i = 0; i < 6; ++i) q.push_back(At(i, i, m));  // deadlines 12 … 17
  Dropped dropped;
  // At t = 4: ℓ(4) = 9 needs a deadline >= 13: R0 (12) is dropped early,
  // though it could still run alone (4 + 6 <= 12).
  ComputeCandidate(BatchPolicyKind::kDeferred, &q,
                   {Millis(4), Millis(4), &m, {}, DropPolicy::kEarly}, dropped.Fn());
  EXPECT_EQ(dropped.ids, (std::vector<RequestId>{0}));
  EXPECT_EQ(q.size(), 5u);
}

TEST(BatchPolicyTest, NetworkDelaysShiftDispatchAndShrinkBudget) {
  ModelSpec m = ExampleModel();
  RequestQueue q;
  for (int i = 0; i < 4; ++i) q.push_back(At(i, 0, m));
  Dropped dropped;
  NetworkDelays delays{Millis(0.5), Millis(0.25), Millis(1)};
  // d = 12 − 1 (response) = 11; start(b) = 0.5 + 0.25 b; start(4) + ℓ(4) = 1.5 + 9 <= 11.
  Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &q,
                                 {0, 0, &m, delays, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.exec_at, Millis(1.5));
  EXPECT_EQ(c.dispatch_at, 0);
  EXPECT_EQ(c.latest_dispatch, Millis(11 - 9 - 1.5));
}

TEST(BatchPolicyTest, TimeoutWaitsForMaxBatchOrDelay) {
  ModelSpec m = ExampleModel();
  m.max_batch = 4;
  m.max_queue_delay = Millis(2);
  RequestQueue q = {At(1, 0, m), At(2, 0.5, m)};
  Dropped dropped;
  Candidate c = ComputeCandidate(BatchPolicyKind::kTimeout, &q,
                                 {Millis(0.5), Millis(0.5), &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.exec_at, Millis(2));  // oldest arrival + delay
  EXPECT_EQ(c.latest_dispatch, kInfiniteFuture);
  q.push_back(At(3, 0.6, m));
  q.push_back(At(4, 0.7, m));
  q.push_back(At(5, 0.8, m));
  c = ComputeCandidate(BatchPolicyKind::kTimeout, &q,
                       {Millis(0.8), Millis(0.8), &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.exec_at, Millis(0.8));  // a full batch goes now
}

TEST(BatchPolicyTest, EnqueueKeepsDeadlineOrder) {
  RequestQueue q;
  EnqueueByDeadline(&q, {1, 0, 0, 50});
  EnqueueByDeadline(&q, {2, 0, 0, 70});
  EnqueueByDeadline(&q, {3, 0, 0, 60});
  EnqueueByDeadline(&q, {4, 0, 0, 60});
  std::vector<RequestId> order;
  for (const Request& r : q) order.push_back(r.id);
  EXPECT_EQ(order, (std::vector<RequestId>{1, 3, 4, 2}));
}

TEST(BatchPolicyTest, TakeBatchPopsTheHead) {
  ModelSpec m = ExampleModel();
  RequestQueue q = {At(1, 0, m), At(2, 1, m), At(3, 2, m)};
  Batch b = TakeBatch(&q, 0, 2, Millis(4), m.profile.Latency(2), 2);
  EXPECT_EQ(b.gpu, 2);
  EXPECT_EQ(b.exec_at, Millis(4));
  EXPECT_EQ(b.latency, Millis(7));
  ASSERT_EQ(b.requests.size(), 2u);
  EXPECT_EQ(b.requests[1].id, 2u);
  EXPECT_EQ(q.size(), 1u);
}


// Holding pays only when batch-mates are expected and the batch they save
// is worth, at the price, the wait of the requests held.
TEST(HoldPaysTest, HoldingPaysOnlyForExpectedBatchMatesWorthTheWait) {
  HoldCase c{.size = 1, .wait = Millis(10), .arrivals = 3, .extra_batch = Millis(5), .price = 10};
  EXPECT_TRUE(HoldPays(c));  // 10 · 0.95 · 5 ms > 1 · 10 ms
  HoldCase none = c;
  none.arrivals = 0;
  EXPECT_FALSE(HoldPays(none)) << "no batch-mate is coming";
  HoldCase free = c;
  free.price = 0;
  EXPECT_FALSE(HoldPays(free)) << "GPU time that costs nothing is not worth a wait";
  HoldCase many = c;
  many.size = 20;
  EXPECT_FALSE(HoldPays(many)) << "20 requests waiting 10 ms outweigh 5 GPU-ms";
  HoldCase cheap = c;
  cheap.price = 1;
  EXPECT_FALSE(HoldPays(cheap));
  HoldCase unlikely = c;
  unlikely.arrivals = 0.1;  // P(one comes) ≈ 0.095
  EXPECT_FALSE(HoldPays(unlikely));
  unlikely.price = 100;
  EXPECT_TRUE(HoldPays(unlikely));
}

Request AtLevel(RequestId id, Time deadline, int level) { return Request{id, 0, 0, deadline, level}; }

TEST(BatchPolicyTest, TheQueueKeepsHigherLevelsFirstThenDeadlines) {
  RequestQueue q;
  EnqueueByDeadline(&q, AtLevel(1, Millis(5), 1));
  EnqueueByDeadline(&q, AtLevel(2, Millis(10), 0));
  EnqueueByDeadline(&q, AtLevel(3, Millis(7), 0));
  EnqueueByDeadline(&q, AtLevel(4, Millis(3), 1));
  EnqueueByDeadline(&q, AtLevel(5, Millis(7), 0));  // ties keep arrival order
  std::vector<RequestId> order;
  for (const Request& r : q) order.push_back(r.id);
  EXPECT_EQ(order, (std::vector<RequestId>{3, 5, 2, 4, 1}));
}

// ℓ(b) = b + 5 ms. Eight requests of level 0 due at 12 ms fill a batch of 7
// (ℓ(7) = 12); an older request of level 1, due at 7 ms, would have led a
// batch of two at one level (ℓ(2) = 7), but behind the eight it cannot
// (ℓ(9) = 14): it is dropped, and the batch is the level-0 one.
TEST(BatchPolicyTest, ALowerLevelThatCannotMakeItBehindTheHigherOneIsDroppedFirst) {
  ModelSpec m = ExampleModel();
  for (const BatchPolicyKind kind : {BatchPolicyKind::kDeferred, BatchPolicyKind::kEager}) {
    RequestQueue q;
    for (int i = 0; i < 8; ++i) EnqueueByDeadline(&q, AtLevel(i + 1, Millis(12), 0));
    EnqueueByDeadline(&q, AtLevel(100, Millis(7), 1));
    Dropped dropped;
    const Candidate c = ComputeCandidate(kind, &q, BatchContext{0, 0, &m, {}, DropPolicy::kLazy}, dropped.Fn());
    EXPECT_EQ(dropped.ids, std::vector<RequestId>{100});
    EXPECT_EQ(c.size, 7);
    EXPECT_EQ(q.size(), 8u);
    for (const Request& r : q) EXPECT_EQ(r.level, 0);

    RequestQueue one_level;  // the same requests at one level: the old one goes first
    for (int i = 0; i < 8; ++i) EnqueueByDeadline(&one_level, At(i + 1, 0, m));
    EnqueueByDeadline(&one_level, Request{100, 0, Millis(-5), Millis(7)});
    Dropped none;
    EXPECT_EQ(ComputeCandidate(kind, &one_level, BatchContext{0, 0, &m, {}, DropPolicy::kLazy}, none.Fn()).size, 2);
    EXPECT_EQ(one_level.front().id, 100u);
    EXPECT_TRUE(none.ids.empty());
  }
}

// A lower level's request that fits rides in the batch behind the higher
// ones, and its deadline bounds the batch: due at 10 ms behind four due at
// 12 ms, a batch of five (ℓ(5) = 10) still makes it.
TEST(BatchPolicyTest, ALowerLevelRidesBehindTheHigherOneWithinItsDeadline) {
  ModelSpec m = ExampleModel();
  RequestQueue q;
  for (int i = 0; i < 4; ++i) EnqueueByDeadline(&q, AtLevel(i + 1, Millis(12), 0));
  EnqueueByDeadline(&q, AtLevel(5, Millis(10), 1));
  EnqueueByDeadline(&q, AtLevel(6, Millis(30), 1));
  Dropped dropped;
  const Candidate c =
      ComputeCandidate(BatchPolicyKind::kEager, &q, BatchContext{0, 0, &m, {}, DropPolicy::kLazy}, dropped.Fn());
  EXPECT_TRUE(dropped.ids.empty());
  EXPECT_EQ(c.size, 5);  // six would end at 11 ms, past the 10 ms of the fifth
  EXPECT_EQ(c.latest_dispatch, Millis(10 - 10));
  const Batch b = TakeBatch(&q, 0, 0, c.exec_at, 0, c.size);
  EXPECT_EQ(b.requests.back().id, 5u);
  EXPECT_EQ(q.front().id, 6u);
}

// Early drop (window 4) at 4 ms: a batch of four (ℓ(4) = 9) would miss the
// 12 ms of the head. At one level the two requests due then are dropped
// early; with a lower level queued they are kept (theirs is the level early
// drop thins) and lead a batch of three.
TEST(BatchPolicyTest, TheHeadIsNotDroppedEarlyWhileALowerLevelIsQueued) {
  ModelSpec m = ExampleModel();
  m.early_drop_window = 4;
  for (int low : {0, 1}) {
    SCOPED_TRACE(low ? "two levels" : "one level");
    RequestQueue q;
    for (int i = 0; i < 2; ++i) EnqueueByDeadline(&q, AtLevel(i + 1, Millis(12), 0));
    for (int i = 0; i < 3; ++i) EnqueueByDeadline(&q, AtLevel(i + 10, Millis(40), low));
    Dropped dropped;
    const Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &q,
                                         BatchContext{Millis(4), Millis(4), &m, {}, DropPolicy::kEarly}, dropped.Fn());
    if (low) {
      EXPECT_TRUE(dropped.ids.empty());
      EXPECT_EQ(c.size, 3);  // ends at 12 ms
      EXPECT_EQ(q.front().id, 1u);
    } else {
      EXPECT_EQ(dropped.ids, (std::vector<RequestId>{1, 2}));
      EXPECT_EQ(q.front().id, 10u);
    }
  }
}

TEST(BatchPolicyTest, TheHeadIsNotDroppedEarlyWhileALowerLevelRanWithinItsObjective) {
  ModelSpec m = ExampleModel();
  m.early_drop_window = 4;
  for (const Duration ago : {Millis(1), Millis(12), Millis(13)}) {
    SCOPED_TRACE(ago);
    RequestQueue q;
    for (int i = 0; i < 5; ++i) EnqueueByDeadline(&q, AtLevel(i + 1, Millis(12), 0));
    BatchContext ctx{Millis(4), Millis(4), &m, {}, DropPolicy::kEarly};
    ctx.lower_level_ran = ctx.now - ago;  // the heads' objective is 12 ms
    Dropped dropped;
    const Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &q, ctx, dropped.Fn());
    if (ago <= Millis(12)) {
      EXPECT_TRUE(dropped.ids.empty());
      EXPECT_EQ(c.size, 3);  // the most that end by 12 ms
    } else {
      EXPECT_EQ(dropped.ids, (std::vector<RequestId>{1, 2}));  // as with one level
    }
  }
}

}  // namespace
}  // namespace tutti
