// A graph with a stateless step before and after a stateful one, served by
// the in-process data plane (InferenceCore, SequenceEngine, GraphEngine),
// its stateful step on a ReplicatedExecutor whose primary is killed between
// two rounds of requests: every request answered once, no state lost, and
// — with nondeterminism — no inconsistent answer under NSPB, while
// checkpoint-replay's are counted.
#include <condition_variable>
#include <mutex>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/real_clock.h"
#include "tutti/graphs/graph_engine.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/sequences/sequence_engine.h"
#include "tutti/serving/inference_core.h"
#include "tutti/testing/wait.h"

namespace tutti {
namespace {

// Stateless models 0 (y = 2x) and 1 (y = x + 1000), at once.
class ArithExecutor final : public Executor {
 public:
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    for (float x : batch.input) r.output.push_back(batch.model == 0 ? 2 * x : x + 1000);
    done(std::move(r));
  }
  std::string kind() const override { return "arith"; }
};

// The stateful model's stateless form: [x | h] → [h + x + noise | h + x + noise].
class NoisySumExecutor final : public Executor {
 public:
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    for (int i = 0; i < batch.size; ++i) {
      const float h = batch.input[2 * i + 1] + batch.input[2 * i] + noise_(rng_);
      r.output.insert(r.output.end(), {h, h});
    }
    done(std::move(r));
  }
  std::string kind() const override { return "sum"; }

 private:
  std::mt19937 rng_{std::random_device{}()};
  std::uniform_real_distribution<float> noise_{0, 1e-3f};
};

struct Outcome {
  int64_t answers = 0, errors = 0;
  std::vector<std::vector<float>> outputs;  // per sequence, in order
  ReplicationStats stats;
};

// 8 sequences of `rounds` steps (x = 1 each) through the graph; the
// primary dies after round `kill_after`.
Outcome RunGraph(ReplicationMode mode, int rounds, int kill_after) {
  RealClock clock;
  ClusterSpec spec;
  const LatencyProfile fast = *LatencyProfile::Linear(kMicrosecond, 10 * kMicrosecond, 16);
  spec.models = {{"scale", fast, kSecond}, {"sum", fast, kSecond}, {"shift", fast, kSecond}};
  spec.sub_clusters = {{{0, 2}, 1}, {{1}, 1}};
  std::vector<std::unique_ptr<Executor>> executors;
  executors.push_back(std::make_unique<ArithExecutor>());
  auto slot = std::make_unique<ReplicatedExecutor>(
      &clock, std::make_unique<NoisySumExecutor>(), std::make_unique<NoisySumExecutor>(),
      std::vector<SlotModel>{{1, 1, 1, 10 * kSecond}}, ReplicationOptions{mode, /*checkpoint_every=*/1000});
  ReplicatedExecutor* replicated = slot.get();
  executors.push_back(std::move(slot));
  InferenceCore::Options options;
  options.policy = "eager";
  std::unique_ptr<InferenceCore> core =
      *InferenceCore::Create(spec, {{1, 1}, {1, 1}, {1, 1}}, std::move(executors), options, &clock);
  SequenceBatching state;
  state.state_shape = {1};
  state.max_sequence_idle_us = 10'000'000;
  SequenceEngine sequences(core.get(), spec, {std::nullopt, state, std::nullopt}, &clock);
  GraphSpec graph;
  graph.name = "pipeline";
  graph.objective = kSecond;
  graph.input_elements = graph.output_elements = 1;
  graph.steps = {{0, -1}, {1, 0}, {2, 1}};
  graph.even_split = true;
  graph.shares = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&sequences, spec, {graph});

  Outcome out;
  out.outputs.resize(8);
  std::mutex mu;
  std::condition_variable cv;
  int64_t answered = 0;
  for (int round = 0; round < rounds; ++round) {
    if (round == kill_after) {
      EXPECT_TRUE(replicated->KillPrimary().ok());
    }
    for (int q = 0; q < 8; ++q) {
      const SequenceRef ref{static_cast<uint64_t>(q + 1), round == 0, round == rounds - 1};
      absl::Status s = engine->SubmitWith(3, {.sequence = ref}, {1.0f}, 0, [&, q](InferenceOutcome o) {
        std::lock_guard<std::mutex> lock(mu);
        ++answered;
        if (o.status.ok()) {
          out.outputs[q].push_back(o.output[0]);
        } else {
          ++out.errors;
        }
        cv.notify_all();
      });
      EXPECT_TRUE(s.ok()) << s;
    }
    std::unique_lock<std::mutex> lock(mu);
    AwaitOrFail(cv, lock, [&] { return answered == 8 * (round + 1); }, "the round's answers");
  }
  engine->StopAccepting();
  engine->WaitIdle();
  out.answers = answered;
  out.stats = replicated->stats();
  return out;
}

TEST(StatefulGraphTest, NspbFailoverMidSequenceLosesNothingAndStaysConsistent) {
  const Outcome o = RunGraph(ReplicationMode::kNspb, 30, 15);
  EXPECT_EQ(o.answers, 8 * 30);  // each once: a second answer would overshoot
  EXPECT_EQ(o.errors, 0);
  for (const std::vector<float>& seq : o.outputs) {
    ASSERT_EQ(seq.size(), 30u);
    for (size_t k = 0; k < seq.size(); ++k) {
      EXPECT_NEAR(seq[k], 1000 + 2.0 * (k + 1), 0.05) << "step " << k;  // no step lost or repeated
    }
  }
  EXPECT_EQ(o.stats.failovers, 1);
  EXPECT_GT(o.stats.audited, 8 * 20);
  EXPECT_EQ(o.stats.inconsistent, 0);
}

TEST(StatefulGraphTest, CheckpointReplayDivergesUnderNondeterminism) {
  const Outcome o = RunGraph(ReplicationMode::kCheckpoint, 30, 15);
  EXPECT_EQ(o.answers, 8 * 30);
  EXPECT_EQ(o.errors, 0);
  EXPECT_GT(o.stats.rerun_batches, 0);
  EXPECT_GT(o.stats.inconsistent, 0);  // replayed states are not the ones the answers read
}

TEST(StatefulGraphTest, WithoutReplicationTheSequencesStatesAreLostWithExplicitErrors) {
  const Outcome o = RunGraph(ReplicationMode::kNone, 20, 10);
  EXPECT_EQ(o.answers, 8 * 20);
  EXPECT_EQ(o.errors, 8 * 10);  // every step after the failure: "the state of sequence N was lost"
}

}  // namespace
}  // namespace tutti
