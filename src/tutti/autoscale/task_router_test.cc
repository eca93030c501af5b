#include "tutti/autoscale/task_router.h"

#include <set>

#include "gtest/gtest.h"
#include "tutti/autoscale/infaas_table2_test_util.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using testing::InfaasTable2;

// A leader's TaskAutoscaler and a frontend's TaskRouter on one manual
// clock: the router gets the scaler's state every `every`, its queries are
// counted by the scaler as the leader counts what frontends submit, and its
// load requests reach the scaler.
struct Split {
  ManualClock clock;
  std::unique_ptr<TaskAutoscaler> scaler;
  std::unique_ptr<TaskRouter> router;
  std::vector<int> routed = std::vector<int>(3, 0);
  std::vector<int> asked = std::vector<int>(3, 0);
  Time updated = -1;  // when the router last got the state (-1: never)
  Duration every = 500 * kMillisecond;

  explicit Split(std::vector<TaskVariant> variants = InfaasTable2()) {
    TaskAutoscaleOptions o;
    o.slack = 1.0;
    const VariantRequirements req{0.8, 300 * kMillisecond, 0};
    scaler = std::make_unique<TaskAutoscaler>(variants, req, o, &clock, [](int, bool) {});
    scaler->Start();
    router = std::make_unique<TaskRouter>(ModelLessTask{variants, req, o}, &clock, [this](int j) {
      ++asked[j];
      scaler->Load(j);
    });
  }
  void Load(double rate, Time until) {
    const Duration gap = static_cast<Duration>(1e9 / rate);
    for (Time t = clock.Now() + gap; t <= until; t += gap) {
      clock.AdvanceTo(t);
      if (updated < 0 || t - updated >= every) {
        router->Update(scaler->RoutingState());
        updated = t;
      }
      const std::optional<VariantChoice> c = router->Route();
      ASSERT_TRUE(c.has_value());
      ASSERT_GE(c->index, 0);
      ++routed[c->index];
      scaler->Count(c->index);
    }
    clock.AdvanceTo(until);
  }
  std::vector<int> Up() const { return {scaler->up(0), scaler->up(1), scaler->up(2)}; }
};

TEST(TaskRouterTest, RoutesNothingBeforeTheFirstStateAndIgnoresAMisSizedOne) {
  Split s;
  EXPECT_FALSE(s.router->Route().has_value());
  EXPECT_FALSE(s.router->Status(0).has_value());
  s.router->Update(TaskRoutingState{{1}, {1}, {false}, {0}});
  EXPECT_FALSE(s.router->Route().has_value());
  s.router->Update(s.scaler->RoutingState());
  const std::optional<VariantChoice> c = s.router->Route();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->index, 0);  // the one instance up: A
  EXPECT_EQ(s.router->Status(0)->first, VariantState::kActive);
  EXPECT_EQ(s.router->Status(1)->first, VariantState::kInactive);
}

TEST(TaskRouterTest, ScalesAsTheAutoscalerRoutingItselfWouldOnHalfSecondOldState) {
  Split s;
  s.Load(10, 5 * kSecond);
  EXPECT_EQ(s.Up(), (std::vector<int>{2, 0, 0}));
  s.Load(1000, 12 * kSecond);
  EXPECT_EQ(s.Up(), (std::vector<int>{0, 2, 1}));
  // Between states the router counts its own queries: B (2×100) and C
  // (800) still share the load about as their saturations do.
  s.routed.assign(3, 0);
  s.Load(1000, 14 * kSecond);
  EXPECT_EQ(s.routed[0], 0);
  EXPECT_NEAR(static_cast<double>(s.routed[2]) / s.routed[1], 4.0, 1.0);
  s.Load(10, 20 * kSecond);
  EXPECT_EQ(s.Up(), (std::vector<int>{2, 0, 0}));
}

TEST(TaskRouterTest, AnInactivePickIsAskedForOnceAndItsQueriesGoToAVariantUp) {
  std::vector<TaskVariant> variants = InfaasTable2();
  variants[1].load_latency = 100 * kMillisecond;  // B loads within the objective: selectable when Inactive
  Split s(variants);
  s.every = 50 * kMillisecond;
  // A (5 q/s) is overloaded within a second at 50 q/s: B is picked and
  // asked for; until it is up the queries still go to A.
  s.Load(50, 200 * kMillisecond);
  EXPECT_EQ(s.routed[1], 0);
  EXPECT_GT(s.routed[0], 0);
  EXPECT_GE(s.asked[1], 1);
  EXPECT_EQ(s.scaler->paid(1), 1);  // asked for once, however often the router asked
  s.Load(50, 400 * kMillisecond);
  EXPECT_EQ(s.Up(), (std::vector<int>{1, 1, 0}));
  s.routed.assign(3, 0);
  s.Load(50, 600 * kMillisecond);
  EXPECT_GT(s.routed[1], 0);
}

}  // namespace
}  // namespace tutti
