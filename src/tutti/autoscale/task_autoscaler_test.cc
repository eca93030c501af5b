#include "tutti/autoscale/task_autoscaler.h"

#include <set>

#include "gtest/gtest.h"
#include "tutti/autoscale/infaas_table2_test_util.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using testing::InfaasTable2;

struct Task {
  ManualClock clock;
  std::set<int> up;
  std::unique_ptr<TaskAutoscaler> scaler;
  std::vector<int> routed = std::vector<int>(3, 0);
  Task(Duration objective, TaskAutoscaleOptions o, std::vector<TaskVariant> variants = InfaasTable2()) {
    o.slack = o.slack == 1.05 ? 1.0 : o.slack;  // Table 3's configurations are those of slack 1
    const VariantRequirements req{0.8, objective, 0};
    EXPECT_TRUE(TaskAutoscaler::Validate(variants, req, o).ok());
    for (int g = 0; g < 12; ++g) up.insert(g);
    scaler = std::make_unique<TaskAutoscaler>(variants, req, o, &clock, [this](int gpu, bool on) {
      if (on) {
        up.insert(gpu);
      } else {
        up.erase(gpu);
      }
    });
    scaler->Start();
  }
  // `rate` queries per second, evenly, until `until`.
  void Load(double rate, Time until) {
    const Duration gap = static_cast<Duration>(1e9 / rate);
    for (Time t = clock.Now() + gap; t <= until; t += gap) {
      clock.AdvanceTo(t);
      const VariantChoice c = scaler->Route();
      ASSERT_GE(c.index, 0);
      ++routed[c.index];
    }
    clock.AdvanceTo(until);
  }
  std::vector<int> Up() const { return {scaler->up(0), scaler->up(1), scaler->up(2)}; }
};

TEST(TaskAutoscalerTest, StartsWithOneInstanceOfTheCheapestVariantInTime) {
  Task t(300 * kMillisecond, {});
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(t.up, (std::set<int>{0}));
  Task fast(50 * kMillisecond, {});  // A is too slow for 50 ms: B
  EXPECT_EQ(fast.Up(), (std::vector<int>{0, 1, 0}));
}

TEST(TaskAutoscalerTest, ScalesHorizontallyThenVerticallyAsInfaasTable3) {
  Task t(300 * kMillisecond, {});
  // 10 q/s at 300 ms: 2×A (cost 2).
  t.Load(10, 5 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{2, 0, 0}));
  EXPECT_EQ(t.up, (std::set<int>{0, 1}));
  // 1,000 q/s: 2×B + 1×C (cost 22); A's instances go only after those are up.
  t.Load(1000, 6 * kSecond + kMillisecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{2, 0, 0}));  // asked for, still loading
  t.Load(1000, 12 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(t.up, (std::set<int>{4, 5, 8}));
  EXPECT_GE(t.scaler->scale_ups(), 2);
  EXPECT_GE(t.scaler->scale_downs(), 1);
  // Back to 10 q/s: down to the cheapest that carries it, after the wait.
  t.Load(10, 20 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{2, 0, 0}));
}

TEST(TaskAutoscalerTest, QueriesGoToTheLeastUtilisedActiveVariant) {
  Task t(300 * kMillisecond, {});
  t.Load(1000, 12 * kSecond);  // B and C up, A gone
  t.routed.assign(3, 0);
  t.Load(1000, 14 * kSecond);
  // Utilisation kept about even: B (2×100) and C (800) share 2,000 queries
  // about as their saturations do, 1 : 4.
  EXPECT_EQ(t.routed[0], 0);
  EXPECT_NEAR(static_cast<double>(t.routed[2]) / t.routed[1], 4.0, 0.5);
}

TEST(TaskAutoscalerTest, AnInactivePickLoadsWhileTheQueryGoesToAVariantUp) {
  std::vector<TaskVariant> variants = InfaasTable2();
  variants[1].load_latency = 100 * kMillisecond;  // B loads within the objective: selectable when Inactive
  Task t(300 * kMillisecond, {}, variants);
  // A (5 q/s) is overloaded within a second at 50 q/s: B is picked, loads,
  // and until it is up the queries still go to A.
  t.Load(50, 200 * kMillisecond);
  EXPECT_EQ(t.routed[1], 0);
  EXPECT_GT(t.routed[0], 0);
  t.Load(50, 400 * kMillisecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 1, 0}));
  t.routed.assign(3, 0);
  t.Load(50, 900 * kMillisecond);
  EXPECT_GT(t.routed[1], t.routed[0]);
}

TEST(TaskAutoscalerTest, AFixedVariantScalesOnlyHorizontally) {
  TaskAutoscaleOptions o;
  o.allowed = {2};  // always C
  Task t(300 * kMillisecond, o);
  EXPECT_EQ(t.Up(), (std::vector<int>{0, 0, 1}));
  t.Load(1000, 10 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{0, 0, 2}));
  EXPECT_EQ(t.routed[0] + t.routed[1], 0);
}

TEST(TaskAutoscalerTest, TheSlotsOfAPoolAreShared) {
  TaskAutoscaleOptions o;
  o.pools = {{"inf1", 1}, {"v100", 1}};
  o.initial = {0, 1, 0};
  // 3,000 q/s is more than the pools carry (4×A + 1×B + 1×C = 920): the
  // plan is the most they carry, within the limits.
  Task t(300 * kMillisecond, o);
  t.Load(3000, 8 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{4, 1, 1}));
}

TEST(TaskAutoscalerTest, CostIsInstanceSecondsTimesCostAndALastInstanceDrainsFirst) {
  TaskAutoscaleOptions o;
  o.initial = {1, 1, 0};
  Task t(300 * kMillisecond, o);
  // No load: from the tick at 1 s the plan keeps one A; after B's 2 s wait
  // (at 3 s) B is drained — routed to no more — and released at the next
  // tick (4 s).
  t.clock.AdvanceTo(3500 * kMillisecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(t.scaler->Route().index, 0);  // B is drained (one query: too little load to keep it)
  t.clock.AdvanceTo(10 * kSecond);
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(t.up, (std::set<int>{0}));
  const std::vector<double> s = t.scaler->InstanceSeconds(0, 10 * kSecond);
  EXPECT_DOUBLE_EQ(s[0], 10);
  EXPECT_DOUBLE_EQ(s[1], 4);
  EXPECT_DOUBLE_EQ(t.scaler->Cost(0, 10 * kSecond), 10 + 4 * 3);
}

TEST(TaskAutoscalerTest, AwaitingUpAnInstanceServesOnlyOnceItsOwnerSaysSo) {
  TaskAutoscaleOptions o;
  o.await_up = true;
  Task t(300 * kMillisecond, o);
  // The initial A is wanted (its slot kept) but on its way: queries wait for it.
  EXPECT_EQ(t.Up(), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(t.up, (std::set<int>{0}));
  EXPECT_EQ(t.scaler->paid(0), 1);
  EXPECT_EQ(t.scaler->Status(0).first, VariantState::kInactive);
  t.scaler->Up(5);  // not awaited: ignored
  t.scaler->Up(0);
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 0, 0}));
  t.scaler->Up(0);  // once only
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 0, 0}));
  // 10 q/s (rising from nothing) asks for more A: their slots come up
  // after the load latency, and they serve only once their owner says so.
  t.Load(10, 5 * kSecond);
  EXPECT_GE(t.scaler->paid(0), 2);
  EXPECT_TRUE(t.up.contains(1));
  EXPECT_EQ(t.Up(), (std::vector<int>{1, 0, 0}));
  t.scaler->Up(1);
  EXPECT_EQ(t.Up(), (std::vector<int>{2, 0, 0}));
}

TEST(TaskAutoscalerTest, ValidateNamesTheProblem) {
  const VariantRequirements req{0.95, kSecond, 0};
  EXPECT_EQ(TaskAutoscaler::Validate(InfaasTable2(), req, {}).code(), absl::StatusCode::kInvalidArgument);
  TaskAutoscaleOptions o;
  o.allowed = {3};
  EXPECT_EQ(TaskAutoscaler::Validate(InfaasTable2(), {0.5, kSecond, 0}, o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TaskAutoscaler::Validate({}, {0.5, kSecond, 0}, {}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tutti
