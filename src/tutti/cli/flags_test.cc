#include "tutti/cli/flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Fixture {
  std::string repo = "models";
  int epochs = 5;
  double lr = 0.001;
  bool verbose = false;
  FlagSet flags{"tutti x [flags]", "Does x."};
  Fixture() {
    flags.String("repo", &repo, "repository directory");
    flags.Int("epochs", &epochs, "training epochs");
    flags.Double("lr", &lr, "learning rate");
    flags.Bool("verbose", &verbose, "say more");
  }
};

TEST(FlagsTest, ParsesAllFormsAndKeepsDefaults) {
  Fixture f;
  ASSERT_TRUE(f.flags.Parse({"--epochs", "7", "--lr=0.5", "--verbose"}).ok());
  EXPECT_EQ(f.epochs, 7);
  EXPECT_DOUBLE_EQ(f.lr, 0.5);
  EXPECT_TRUE(f.verbose);
  EXPECT_EQ(f.repo, "models");
  EXPECT_TRUE(f.flags.WasSet("epochs"));
  EXPECT_FALSE(f.flags.WasSet("repo"));
}

TEST(FlagsTest, ErrorsAreSpecific) {
  EXPECT_THAT(Fixture().flags.Parse({"--epoch", "3"}).message(), HasSubstr("unknown flag --epoch"));
  EXPECT_THAT(Fixture().flags.Parse({"--epochs"}).message(), HasSubstr("--epochs needs a value"));
  EXPECT_THAT(Fixture().flags.Parse({"--epochs", "many"}).message(),
              HasSubstr("--epochs: bad value 'many'"));
  EXPECT_THAT(Fixture().flags.Parse({"stray"}).message(), HasSubstr("unexpected argument 'stray'"));
  Fixture f;
  ASSERT_TRUE(f.flags.Parse({}).ok());
  EXPECT_THAT(f.flags.Require({"repo"}).message(), HasSubstr("missing required flag --repo"));
}

TEST(FlagsTest, HelpListsFlagsWithDefaults) {
  Fixture f;
  ASSERT_TRUE(f.flags.Parse({"--epochs", "2", "--help", "--bogus"}).ok());
  EXPECT_TRUE(f.flags.help_requested());
  const std::string help = f.flags.Help();
  EXPECT_THAT(help, HasSubstr("usage: tutti x [flags]"));
  EXPECT_THAT(help, HasSubstr("--repo VALUE"));
  EXPECT_THAT(help, HasSubstr("(default: models)"));
  EXPECT_THAT(help, HasSubstr("--verbose"));
}

TEST(FlagsTest, HelpThatExplainsItsDefaultIsNotGivenItTwice) {
  FlagSet flags("tutti x [flags]", "Does x.");
  int port = 8000;
  flags.Int("port", &port, "HTTP port (default 8000; 0: any free port)");
  const std::string help = flags.Help();
  EXPECT_THAT(help, HasSubstr("HTTP port (default 8000; 0: any free port)\n"));
  EXPECT_THAT(help, Not(HasSubstr("(default: 8000)")));
}

}  // namespace
}  // namespace tutti::cli
