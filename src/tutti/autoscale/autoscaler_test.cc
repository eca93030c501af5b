#include "tutti/autoscale/autoscaler.h"

#include <set>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

// A pool of 8 whose load the test sets: each interval, `busy_gpus` GPUs'
// worth of work and `bad` of 1000 requests bad.
struct Pool {
  ManualClock clock;
  std::set<int> down;
  double busy_gpus = 0;
  int64_t bad = 0;
  std::unique_ptr<Autoscaler> scaler;
  explicit Pool(AutoscaleOptions o) {
    scaler = std::make_unique<Autoscaler>(
        o, 8, &clock,
        [this, interval = o.interval] {
          return Autoscaler::Window{{.good = 1000 - bad, .late = bad},
                                    static_cast<Duration>(busy_gpus * static_cast<double>(interval))};
        },
        [this](int gpu, bool up) {
          if (up) {
            down.erase(gpu);
          } else {
            down.insert(gpu);
          }
        });
  }
};

AutoscaleOptions Options() {
  AutoscaleOptions o;
  o.interval = kSecond;
  o.provision_delay = 3 * kSecond;
  o.initial_gpus = 2;
  return o;
}

TEST(AutoscalerTest, GpusComeAfterTheirDelayAndTheHighestGoFirst) {
  Pool p(Options());
  p.scaler->Start();
  EXPECT_EQ(p.down, (std::set<int>{2, 3, 4, 5, 6, 7}));
  // Overloaded: 2 GPUs fully busy, 20% bad → 2·0.2/0.8 = 0.5 → 1, or 2/0.8 − 2 = 0.5 → 1 more.
  p.busy_gpus = 2;
  p.bad = 200;
  p.clock.AdvanceTo(kSecond);
  EXPECT_EQ(p.scaler->requested(), 3);
  EXPECT_EQ(p.scaler->up(), 2);
  p.clock.AdvanceTo(3 * kSecond);  // still coming: nothing more requested for it
  EXPECT_EQ(p.scaler->requested(), 3);
  EXPECT_TRUE(p.down.contains(2));
  p.busy_gpus = 2.2;  // on 3 GPUs: 73% busy, within the band (no change)
  p.bad = 0;
  p.clock.AdvanceTo(4 * kSecond);  // its 3 s are up
  EXPECT_FALSE(p.down.contains(2));
  EXPECT_EQ(p.scaler->up(), 3);
  // The load falls to 1 GPU's worth: 33% busy on 3 → release 3·(1 − 0.33/0.8) = 1.75 → 1, the highest.
  p.busy_gpus = 1;
  p.clock.AdvanceTo(5 * kSecond);
  EXPECT_EQ(p.scaler->up(), 2);
  EXPECT_TRUE(p.down.contains(2));
  EXPECT_EQ(p.scaler->scale_ups(), 1);
  EXPECT_EQ(p.scaler->scale_downs(), 1);
  const std::vector<std::pair<Time, int>> a = p.scaler->allocation();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[1], std::make_pair(Time{4 * kSecond}, 3));
  EXPECT_EQ(a[2], std::make_pair(Time{5 * kSecond}, 2));
  EXPECT_DOUBLE_EQ(p.scaler->GpuSeconds(0, 5 * kSecond), 2 * 4 + 3 * 1);
}

TEST(AutoscalerTest, StoppedItActsNoMore) {
  Pool p(Options());
  p.scaler->Start();
  p.busy_gpus = 2;
  p.bad = 500;
  p.clock.AdvanceTo(kSecond);
  ASSERT_GT(p.scaler->requested(), 2);
  p.scaler->Stop();
  p.clock.AdvanceTo(10 * kSecond);
  EXPECT_EQ(p.scaler->up(), 2);  // what was on its way never came
  EXPECT_EQ(p.down.size(), 6u);
}

TEST(AutoscalerTest, ValidatesItsBounds) {
  AutoscaleOptions o = Options();
  EXPECT_TRUE(Autoscaler::Validate(o, 8).ok());
  o.initial_gpus = 9;
  EXPECT_FALSE(Autoscaler::Validate(o, 8).ok());
  o.initial_gpus = 2;
  o.max_gpus = 12;
  EXPECT_FALSE(Autoscaler::Validate(o, 8).ok());
  o.max_gpus = 0;
  o.headroom = 1;
  EXPECT_FALSE(Autoscaler::Validate(o, 8).ok());
}

}  // namespace
}  // namespace tutti
