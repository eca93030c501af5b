#include "tutti/workload/workload.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

std::vector<Arrival> Drain(const WorkloadSpec& spec, int models, Time end, uint64_t seed = 1) {
  std::unique_ptr<ArrivalSource> src = *MakeArrivalSource(spec, models, end, seed);
  std::vector<Arrival> out;
  for (Arrival a; src->Next(&a);) out.push_back(a);
  return out;
}

TEST(WorkloadTest, ConstantRateIsExactAndOrdered) {
  WorkloadSpec spec{.arrival = ArrivalKind::kConstant, .rate = 1000};
  std::vector<Arrival> a = Drain(spec, 1, Seconds(2));
  EXPECT_NEAR(a.size(), 2000, 1);
  for (size_t i = 1; i < a.size(); ++i) {
    EXPECT_GE(a[i].time, a[i - 1].time);
    EXPECT_EQ(a[i].time - a[i - 1].time, Millis(1));
  }
}

TEST(WorkloadTest, PoissonAndGammaHaveTheirRateAndBurstiness) {
  for (double shape : {1.0, 0.25}) {
    WorkloadSpec spec{.arrival = shape == 1.0 ? ArrivalKind::kPoisson : ArrivalKind::kGamma,
                      .gamma_shape = shape, .rate = 5000};
    std::vector<Arrival> a = Drain(spec, 1, Seconds(20), 3);
    EXPECT_NEAR(a.size() / 20.0, 5000, 5000 * 0.03);
    double sum = 0, sum2 = 0;
    for (size_t i = 1; i < a.size(); ++i) {
      const double gap = static_cast<double>(a[i].time - a[i - 1].time);
      sum += gap;
      sum2 += gap * gap;
    }
    const double n = a.size() - 1, mean = sum / n, cv2 = (sum2 / n - mean * mean) / (mean * mean);
    EXPECT_NEAR(cv2, 1.0 / shape, 0.15 / shape) << "shape " << shape;
  }
}

TEST(WorkloadTest, SameSeedSameArrivalsOtherSeedOthers) {
  WorkloadSpec spec{.rate = 100, .zipf_s = 1};
  std::vector<Arrival> a = Drain(spec, 3, Seconds(1), 7), b = Drain(spec, 3, Seconds(1), 7),
                       c = Drain(spec, 3, Seconds(1), 8);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].time, b[i].time);
  EXPECT_NE(a.size() == c.size() && a.back().time == c.back().time, true);
}

TEST(WorkloadTest, ZipfSharesAndExplicitWeights) {
  WorkloadSpec zipf{.zipf_s = 1};
  std::vector<double> s = ModelShares(zipf, 3);
  EXPECT_NEAR(s[0], 1 / (1 + 0.5 + 1.0 / 3), 1e-12);
  EXPECT_NEAR(s[0] / s[1], 2, 1e-12);
  WorkloadSpec w{.weights = {1, 3}};
  EXPECT_EQ(ModelShares(w, 2), (std::vector<double>{0.25, 0.75}));
  WorkloadSpec spec{.arrival = ArrivalKind::kConstant, .rate = 4000, .weights = {1, 3}};
  std::vector<Arrival> a = Drain(spec, 2, Seconds(1));
  int64_t second = 0;
  for (const Arrival& x : a) second += x.model == 1;
  EXPECT_NEAR(second, 3000, 2);
}

TEST(WorkloadTest, PiecewiseRateChangesAtBoundaries) {
  WorkloadSpec spec{.arrival = ArrivalKind::kConstant, .rate = 100,
                    .phases = {{Seconds(1), 1000}, {Seconds(2), 0}}};
  std::vector<Arrival> a = Drain(spec, 1, Seconds(3));
  int64_t first = 0, second = 0, third = 0;
  for (const Arrival& x : a) ++(x.time < Seconds(1) ? first : x.time < Seconds(2) ? second : third);
  EXPECT_NEAR(first, 100, 1);
  EXPECT_NEAR(second, 1000, 1);
  EXPECT_EQ(third, 0);
  EXPECT_DOUBLE_EQ(RateAt(spec, Seconds(1.5)), 1000);
}

TEST(WorkloadTest, TraceReplayAndErrors) {
  testing::TempDir dir;
  const std::string path = dir.WriteFile("t.csv", "time_ms,model\n0.5,1\n0.25,0\n3000,0\n");
  WorkloadSpec spec{.arrival = ArrivalKind::kTrace, .trace_path = path};
  std::vector<Arrival> a = Drain(spec, 2, Seconds(1));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].time, Micros(250));
  EXPECT_EQ(a[1].model, 1);
  dir.WriteFile("bad.csv", "1.0,5\n");
  spec.trace_path = dir.path() + "/bad.csv";
  EXPECT_THAT(MakeArrivalSource(spec, 2, Seconds(1), 1).status().message(),
              ::testing::HasSubstr("bad.csv:1: model index 5"));
  WorkloadSpec neg{.rate = -1};
  EXPECT_FALSE(MakeArrivalSource(neg, 1, Seconds(1), 1).ok());
  WorkloadSpec weights{.weights = {1}};
  EXPECT_FALSE(MakeArrivalSource(weights, 2, Seconds(1), 1).ok());
}

}  // namespace
}  // namespace tutti
