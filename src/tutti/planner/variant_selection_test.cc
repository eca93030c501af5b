#include "tutti/planner/variant_selection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

VariantObservation Seen(double served, Duration latency) {
  return {true, served, 100, latency, Millis(10)};  // saturates at 100 q/s, profiled 10 ms
}

// INFaaS Figure 4's transitions, with hysteresis so that a variant near a
// threshold does not flap.
TEST(VariantStateTest, TransitionsFollowLoadAndLatency) {
  VariantState s = VariantState::kInactive;
  s = NextVariantState(s, Seen(0, 0));
  EXPECT_EQ(s, VariantState::kActive) << "loaded";
  s = NextVariantState(s, Seen(60, Millis(10)));
  EXPECT_EQ(s, VariantState::kActive);
  s = NextVariantState(s, Seen(100, Millis(10)));
  EXPECT_EQ(s, VariantState::kOverloaded) << "serving at its peak";
  s = NextVariantState(s, Seen(95, Millis(10)));
  EXPECT_EQ(s, VariantState::kOverloaded) << "within the hysteresis";
  s = NextVariantState(s, Seen(85, Millis(10)));
  EXPECT_EQ(s, VariantState::kActive);
  s = NextVariantState(s, Seen(50, Millis(13)));
  EXPECT_EQ(s, VariantState::kInterfered) << "30% slower than its profile, not overloaded";
  s = NextVariantState(s, Seen(50, Millis(11.5)));
  EXPECT_EQ(s, VariantState::kInterfered) << "within the hysteresis";
  s = NextVariantState(s, Seen(100, Millis(13)));
  EXPECT_EQ(s, VariantState::kOverloaded) << "overload comes first";
  s = NextVariantState(s, Seen(20, Millis(10.5)));
  EXPECT_EQ(s, VariantState::kActive);
  s = NextVariantState(s, Seen(50, Millis(11.5)));
  EXPECT_EQ(s, VariantState::kActive) << "below the threshold to enter Interfered";
  s = NextVariantState(s, VariantObservation{});
  EXPECT_EQ(s, VariantState::kInactive) << "unloaded";
  EXPECT_STREQ(VariantStateName(VariantState::kInterfered), "interfered");
}

// Fashion-MNIST classifiers: variants of one task.
std::vector<SelectableVariant> Variants() {
  return {
      {"mlp-cpu", 0.86, Millis(2), Millis(50), 1, VariantState::kActive, 0.7},
      {"cnn-cpu", 0.91, Millis(12), Millis(80), 2, VariantState::kActive, 0.2},
      {"cnn-gpu", 0.91, Millis(3), Millis(900), 10, VariantState::kInactive, 0},
      {"cnn-gpu-b8", 0.91, Millis(5), Millis(400), 8, VariantState::kInactive, 0},
      {"resnet-gpu", 0.93, Millis(8), Millis(1500), 16, VariantState::kOverloaded, 1.0},
  };
}

TEST(VariantSelectionTest, PrefersActiveThenInactiveThenBusy) {
  std::vector<SelectableVariant> v = Variants();
  // 90% within 20 ms: the active CNN.
  VariantChoice c = SelectVariant(v, {0.9, Millis(20)});
  EXPECT_EQ(v[c.index].name, "cnn-cpu");
  EXPECT_TRUE(c.meets);
  EXPECT_TRUE(c.note.empty());
  // 90% within 10 ms: no active one; of the inactive, the one that starts
  // soonest (400 + 5 ms against 900 + 3).
  c = SelectVariant(v, {0.9, Millis(10)});
  EXPECT_EQ(v[c.index].name, "cnn-gpu-b8");
  EXPECT_TRUE(c.meets);
  // 85%: both active ones qualify; the less utilised.
  c = SelectVariant(v, {0.85, Millis(20)});
  EXPECT_EQ(v[c.index].name, "cnn-cpu");
  v[1].utilisation = 0.9;
  c = SelectVariant(v, {0.85, Millis(20)});
  EXPECT_EQ(v[c.index].name, "mlp-cpu");
  // 92%: only the overloaded one; chosen, with a note.
  c = SelectVariant(v, {0.92, Millis(20)});
  EXPECT_EQ(v[c.index].name, "resnet-gpu");
  EXPECT_TRUE(c.meets);
  EXPECT_THAT(c.note, HasSubstr("overloaded"));
  // A cost ceiling rules the dear ones out.
  c = SelectVariant(v, {0.9, Millis(10), 9});
  EXPECT_EQ(v[c.index].name, "cnn-gpu-b8");
}

TEST(VariantSelectionTest, WithoutAMatchTheClosestOneAndWhy) {
  std::vector<SelectableVariant> v = Variants();
  // 95% within 20 ms: none; the most accurate within the objective.
  VariantChoice c = SelectVariant(v, {0.95, Millis(20)});
  EXPECT_FALSE(c.meets);
  EXPECT_EQ(v[c.index].name, "resnet-gpu");
  EXPECT_THAT(c.note, HasSubstr("no variant meets accuracy >= 0.95 within 20 ms; closest: resnet-gpu"));
  // 90% within 1 ms: nothing is that fast; the fastest accurate enough.
  c = SelectVariant(v, {0.9, Millis(1)});
  EXPECT_FALSE(c.meets);
  EXPECT_EQ(v[c.index].name, "cnn-gpu");
  // 99% within 1 ms: the fastest of all.
  c = SelectVariant(v, {0.99, Millis(1)});
  EXPECT_EQ(v[c.index].name, "mlp-cpu");
  c = SelectVariant({}, {0.5, Millis(10)});
  EXPECT_EQ(c.index, -1);
  EXPECT_THAT(c.note, HasSubstr("no variants"));
}

}  // namespace
}  // namespace tutti
