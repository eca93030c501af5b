#include "tutti/repository/variants.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

ModelConfig Registered() {
  ModelConfig m;
  m.name = "net";
  m.platform = Platform::kBuiltin;
  m.task = "fashion-mnist";
  m.accuracy = 0.91;
  m.parameters = 1000;
  m.load_ms = 20;
  m.profiles["cpu"] = *LatencyProfile::FromPoints(
      {{1, 200 * kMicrosecond}, {8, 900 * kMicrosecond}, {32, 2800 * kMicrosecond}}, Monotonicity::kReject);
  return m;
}

TEST(VariantsTest, OneVariantPerKindWithTheCpuProfileScaled) {
  auto variants = GenerateVariants(Registered(), BuiltinHardwareKinds());
  ASSERT_TRUE(variants.ok()) << variants.status();
  ASSERT_EQ(variants->size(), 3u);
  const ModelVariant& cpu = (*variants)[0];
  const ModelVariant& inf1 = (*variants)[1];
  EXPECT_EQ(cpu.name, "net@cpu");
  EXPECT_EQ(inf1.name, "net@inf1");
  EXPECT_EQ(inf1.model, "net");
  EXPECT_DOUBLE_EQ(inf1.accuracy, 0.91);
  EXPECT_DOUBLE_EQ(inf1.cost, 3);
  EXPECT_EQ(inf1.load_latency, kSecond + 20 * kMillisecond);  // provisioning + the measured load
  EXPECT_EQ(cpu.load_latency, 500 * kMillisecond + 20 * kMillisecond);
  EXPECT_EQ(inf1.memory_bytes, 4000);
  EXPECT_EQ(cpu.profile.Latency(8), 900 * kMicrosecond);
  // inf1: batch 1 ten times faster, each further item twenty times.
  EXPECT_EQ(inf1.profile.Latency(1), 20 * kMicrosecond);
  EXPECT_EQ(inf1.profile.Latency(32), 20 * kMicrosecond + (2800 - 200) * kMicrosecond / 20);
  EXPECT_EQ(inf1.profile.max_batch(), 32);
}

TEST(VariantsTest, ModelsThatCannotHaveVariantsSayWhy) {
  ModelConfig m = Registered();
  m.accuracy.reset();
  EXPECT_THAT(GenerateVariants(m, BuiltinHardwareKinds()).status().message(), testing::HasSubstr("accuracy"));
  m = Registered();
  m.profiles.clear();
  EXPECT_THAT(GenerateVariants(m, BuiltinHardwareKinds()).status().message(), testing::HasSubstr("cpu profile"));
  m = Registered();
  m.platform = Platform::kEnsemble;
  EXPECT_THAT(GenerateVariants(m, BuiltinHardwareKinds()).status().message(), testing::HasSubstr("graph"));
}

}  // namespace
}  // namespace tutti
