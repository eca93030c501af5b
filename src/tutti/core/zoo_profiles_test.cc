#include "tutti/core/zoo_profiles.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/source_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

using ::tutti::testing::SourceDir;

TEST(ZooProfilesTest, LoadsThePapersA100Table) {
  auto zoo = LoadZooCsv(SourceDir() + "/data/profiles/symphony_zoo_a100.csv", 64);
  ASSERT_TRUE(zoo.ok()) << zoo.status();
  EXPECT_EQ(zoo->size(), 37u);
  EXPECT_EQ(zoo->front().name, "DenseNet121");
  EXPECT_EQ(zoo->front().profile.Latency(1), Millis(0.054 + 10.546));
  EXPECT_EQ(zoo->front().slo, Millis(21));
}

TEST(ZooProfilesTest, Loads1080TiTable) {
  auto zoo = LoadZooCsv(SourceDir() + "/data/profiles/symphony_zoo_1080ti.csv", 32);
  ASSERT_TRUE(zoo.ok()) << zoo.status();
  EXPECT_EQ(zoo->size(), 35u);
  EXPECT_EQ(zoo->front().profile.max_batch(), 32);
}

TEST(ZooProfilesTest, ErrorsNameTheLine) {
  const std::string header = "# comment\nmodel,alpha_ms,beta_ms,slo_ms\n";
  EXPECT_THAT(ParseZooCsv("name,a,b\n", 8).status().message(), HasSubstr("line 1: expected header"));
  EXPECT_THAT(ParseZooCsv(header + "A,1,2\n", 8).status().message(),
              HasSubstr("line 3: expected 4 columns, got 3"));
  EXPECT_THAT(ParseZooCsv(header + "A,x,2,3\n", 8).status().message(),
              HasSubstr("line 3: 'x' is not a number"));
  EXPECT_THAT(ParseZooCsv(header + "A,1,2,3\nA,1,2,3\n", 8).status().message(),
              HasSubstr("line 4: model A repeated"));
  EXPECT_THAT(ParseZooCsv(header + "A,-1,2,3\n", 8).status().message(), HasSubstr("line 3"));
  EXPECT_THAT(ParseZooCsv("", 8).status().message(), HasSubstr("empty"));
  EXPECT_EQ(LoadZooCsv("/nonexistent.csv", 8).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tutti
