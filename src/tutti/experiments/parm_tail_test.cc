#include "tutti/experiments/parm_tail.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

ParmTailSetup Small(Redundancy redundancy, int k) {
  ParmTailSetup s;
  s.redundancy = redundancy;
  s.k = k;
  s.instances = 6;
  s.rate = 200;  // 10 ms queries on 6 instances: a third loaded
  s.requests = 6000;
  s.slowdowns = {.concurrent = 1, .instances_per_episode = 2, .min_duration = Millis(200),
                 .max_duration = Millis(600), .factor = 5, .seed = 3};
  return s;
}

const LatencyProfile kTenMs = *LatencyProfile::Linear(0, Millis(10), 1);

TEST(ParmTailTest, EveryRequestIsAnsweredAndRunsAreDeterministic) {
  for (Redundancy r : {Redundancy::kNone, Redundancy::kEqualResources, Redundancy::kParm}) {
    const ParmTailResult a = RunParmTailEmulated(Small(r, 2), kTenMs);
    EXPECT_EQ(a.requests, 6000) << a.label;
    EXPECT_EQ(a.errors, 0) << a.label;
    EXPECT_EQ(a.instances, r == Redundancy::kNone ? 6 : 9);
    EXPECT_EQ(a.reconstructed > 0, r == Redundancy::kParm) << a.label;
    const ParmTailResult b = RunParmTailEmulated(Small(r, 2), kTenMs);
    EXPECT_EQ(a.p999, b.p999);
    EXPECT_EQ(a.reconstructed, b.reconstructed);
    EXPECT_GE(a.p50, Millis(10));
  }
}

// The paper's claim, at small scale: with slowed instances ParM cuts the
// tail that Equal-Resources (the same number of instances, all deployed
// models) still shows, for k = 2, 3, 4.
TEST(ParmTailTest, ParmShrinksTheTailBelowEqualResources) {
  for (int k = 2; k <= 4; ++k) {
    const ParmTailResult er = RunParmTailEmulated(Small(Redundancy::kEqualResources, k), kTenMs);
    const ParmTailResult parm = RunParmTailEmulated(Small(Redundancy::kParm, k), kTenMs);
    EXPECT_LT(parm.p999, er.p999) << "k " << k;
    EXPECT_LT(parm.p999 - parm.p50, er.p999 - er.p50) << "k " << k;
  }
}

}  // namespace
}  // namespace tutti
