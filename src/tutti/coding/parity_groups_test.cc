#include "tutti/coding/parity_groups.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::Each;
using ::testing::IsEmpty;

constexpr int kIn = 4, kOut = 3;

// A linear deployed model F(x) = Wx: with the sum encoder, F is its own exact
// parity model, so every reconstruction must equal the original.
std::vector<float> F(absl::Span<const float> x) {
  std::vector<float> y;
  for (size_t i = 0; i < x.size(); i += kIn) {
    for (int o = 0; o < kOut; ++o) {
      float v = 0;
      for (int j = 0; j < kIn; ++j) v += static_cast<float>(o + 1) * static_cast<float>(j - 1) * x[i + j];
      y.push_back(v);
    }
  }
  return y;
}

std::vector<float> Inputs(int size, int seed) {
  std::vector<float> x(size * kIn);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((seed * 7 + static_cast<int>(i) * 3) % 11) - 5;
  return x;
}

ParityGroups Make(int k) { return ParityGroups(*ParityCodec::Create(ParityEncoder::kSum, k, {kIn}), kOut); }

struct Sent {
  ParityGroups::BatchKey key;
  std::vector<float> inputs;
};

TEST(ParityGroupsTest, RebuildsTheSlowBatchExactlyAndDiscardsItsLateOriginal) {
  for (int k = 2; k <= 4; ++k) {
    ParityGroups groups = Make(k);
    std::vector<Sent> sent;
    ParityGroups::Dispatched last;
    for (int i = 0; i < k; ++i) {
      const int size = 1 + i % 3;  // unequal batches: sizes 1, 2, 3, 1
      std::vector<float> in = Inputs(size, i);
      last = groups.AddBatch(size, in);
      sent.push_back({last.batch, in});
      if (i + 1 < k) {
        EXPECT_THAT(last.parity_queries, IsEmpty());
      }
    }
    ASSERT_EQ(last.parity_queries.size(), 3u - (k == 2));  // the largest batch's size
    // Batch 1 (size 2) is slow; the others finish.
    const int slow = 1;
    ParityGroups::Events events;
    for (int i = 0; i < k; ++i) {
      if (i != slow) {
        EXPECT_THAT(groups.OnBatchDone(sent[i].key, F(sent[i].inputs), &events), Each(true));
      }
    }
    EXPECT_THAT(events.reconstructions, IsEmpty());  // no parity output yet
    for (int p = 0; p < static_cast<int>(last.parity_queries.size()); ++p) {
      groups.OnParityDone(last.group, p, F(last.parity_queries[p]), &events);
    }
    ASSERT_EQ(events.reconstructions.size(), 2u) << "k " << k;
    const std::vector<float> truth = F(sent[slow].inputs);
    for (const auto& r : events.reconstructions) {
      EXPECT_EQ(r.batch, sent[slow].key);
      EXPECT_EQ(r.output, std::vector<float>(truth.begin() + r.position * kOut, truth.begin() + (r.position + 1) * kOut));
      EXPECT_TRUE(groups.Claim(r.batch, r.position));
      EXPECT_FALSE(groups.Claim(r.batch, r.position));  // answered once
    }
    EXPECT_THAT(groups.OnBatchDone(sent[slow].key, truth, &events), Each(false));
    EXPECT_EQ(groups.stats().reconstructions, 2);
    EXPECT_EQ(groups.stats().discarded_originals, 2);
    EXPECT_EQ(groups.tracked_groups(), 0u);
    EXPECT_EQ(groups.tracked_batches(), 0u);
  }
}

TEST(ParityGroupsTest, ParityAfterEveryOriginalIsDropped) {
  ParityGroups groups = Make(2);
  ParityGroups::Dispatched a = groups.AddBatch(1, Inputs(1, 1));
  ParityGroups::Dispatched b = groups.AddBatch(1, Inputs(1, 2));
  ParityGroups::Events events;
  EXPECT_THAT(groups.OnBatchDone(a.batch, F(Inputs(1, 1)), &events), Each(true));
  EXPECT_THAT(groups.OnBatchDone(b.batch, F(Inputs(1, 2)), &events), Each(true));
  EXPECT_EQ(groups.tracked_groups(), 0u);
  groups.OnParityDone(b.group, 0, F(b.parity_queries[0]), &events);
  EXPECT_THAT(events.reconstructions, IsEmpty());
  EXPECT_EQ(groups.stats().dropped_parities, 1);
  EXPECT_EQ(groups.stats().reconstructions, 0);
}

TEST(ParityGroupsTest, OfferedReconstructionLosesToAnOriginalThatArrivesBeforeTheClaim) {
  ParityGroups groups = Make(2);
  ParityGroups::Dispatched a = groups.AddBatch(1, Inputs(1, 1));
  ParityGroups::Dispatched b = groups.AddBatch(1, Inputs(1, 2));
  ParityGroups::Events events;
  groups.OnBatchDone(a.batch, F(Inputs(1, 1)), &events);
  groups.OnParityDone(b.group, 0, F(b.parity_queries[0]), &events);
  ASSERT_EQ(events.reconstructions.size(), 1u);
  // The owner waits before claiming; the original comes first and wins.
  EXPECT_THAT(groups.OnBatchDone(b.batch, F(Inputs(1, 2)), &events), Each(true));
  EXPECT_FALSE(groups.Claim(b.batch, 0));
  EXPECT_EQ(groups.tracked_groups(), 0u);
}

TEST(ParityGroupsTest, FailedBatchIsRebuiltOrReportedWhenNothingCanRebuildIt) {
  ParityGroups groups = Make(2);
  // Rebuilt: the parity output arrives after the failure.
  ParityGroups::Dispatched a = groups.AddBatch(1, Inputs(1, 1));
  ParityGroups::Dispatched b = groups.AddBatch(1, Inputs(1, 2));
  ParityGroups::Events events;
  groups.OnBatchFailed(b.batch, &events);
  groups.OnBatchDone(a.batch, F(Inputs(1, 1)), &events);
  EXPECT_THAT(events.failures, IsEmpty());
  groups.OnParityDone(b.group, 0, F(b.parity_queries[0]), &events);
  ASSERT_EQ(events.reconstructions.size(), 1u);
  EXPECT_EQ(events.reconstructions[0].output, F(Inputs(1, 2)));
  EXPECT_TRUE(groups.Claim(b.batch, 0));
  EXPECT_EQ(groups.tracked_groups(), 0u);

  // Reported: the parity query was lost.
  ParityGroups::Dispatched c = groups.AddBatch(1, Inputs(1, 3));
  ParityGroups::Dispatched d = groups.AddBatch(1, Inputs(1, 4));
  events = {};
  groups.OnBatchFailed(c.batch, &events);
  EXPECT_THAT(events.failures, IsEmpty());
  groups.OnParityLost(d.group, 0, &events);
  ASSERT_EQ(events.failures.size(), 1u);
  EXPECT_EQ(events.failures[0].batch, c.batch);
  groups.OnBatchDone(d.batch, F(Inputs(1, 4)), &events);
  EXPECT_EQ(groups.tracked_groups(), 0u);

  // Reported at once: a group that is not full has no parity on its way.
  ParityGroups::Dispatched e = groups.AddBatch(2, Inputs(2, 5));
  events = {};
  groups.OnBatchFailed(e.batch, &events);
  EXPECT_EQ(events.failures.size(), 2u);
}

// Random orders of every event, for k = 2, 3, 4: each position is answered
// exactly once (original, claimed reconstruction or failure), every claimed
// reconstruction is exact, and nothing stays tracked.
TEST(ParityGroupsTest, EveryQueryIsAnsweredExactlyOnceInAnyEventOrder) {
  for (int k = 2; k <= 4; ++k) {
    for (int seed = 0; seed < 200; ++seed) {
      std::mt19937 rng(seed * 10 + k);
      ParityGroups groups = Make(k);
      std::map<std::pair<uint64_t, int>, int> answers;
      std::map<uint64_t, std::vector<float>> inputs;
      std::vector<std::function<void(ParityGroups::Events*)>> pending;
      const int batches = k * 3;
      for (int i = 0; i < batches; ++i) {
        const int size = 1 + static_cast<int>(rng() % 3);
        std::vector<float> in = Inputs(size, seed + i);
        ParityGroups::Dispatched d = groups.AddBatch(size, in);
        inputs[d.batch] = in;
        for (int p = 0; p < size; ++p) answers[{d.batch, p}] = 0;
        const bool fails = rng() % 5 == 0;
        pending.push_back([&, d, in, fails](ParityGroups::Events* ev) {
          if (fails) {
            groups.OnBatchFailed(d.batch, ev);
            return;
          }
          std::vector<bool> deliver = groups.OnBatchDone(d.batch, F(in), ev);
          for (size_t p = 0; p < deliver.size(); ++p) answers[{d.batch, static_cast<int>(p)}] += deliver[p];
        });
        for (size_t p = 0; p < d.parity_queries.size(); ++p) {
          const bool lost = rng() % 6 == 0;
          std::vector<float> out = F(d.parity_queries[p]);
          pending.push_back([&, d, p, out, lost](ParityGroups::Events* ev) {
            if (lost) {
              groups.OnParityLost(d.group, static_cast<int>(p), ev);
            } else {
              groups.OnParityDone(d.group, static_cast<int>(p), out, ev);
            }
          });
        }
      }
      std::shuffle(pending.begin(), pending.end(), rng);
      for (auto& event : pending) {
        ParityGroups::Events ev;
        event(&ev);
        for (const auto& r : ev.reconstructions) {
          if (!groups.Claim(r.batch, r.position)) continue;
          ++answers[{r.batch, r.position}];
          const std::vector<float> truth = F(inputs[r.batch]);
          ASSERT_EQ(r.output, std::vector<float>(truth.begin() + r.position * kOut,
                                                 truth.begin() + (r.position + 1) * kOut));
        }
        for (const auto& f : ev.failures) ++answers[{f.batch, f.position}];
      }
      for (const auto& [where, n] : answers) {
        ASSERT_EQ(n, 1) << "k " << k << " seed " << seed << " batch " << where.first << " position " << where.second;
      }
      EXPECT_EQ(groups.tracked_groups(), 0u) << "k " << k << " seed " << seed;
      EXPECT_EQ(groups.tracked_batches(), 0u);
    }
  }
}

}  // namespace
}  // namespace tutti
