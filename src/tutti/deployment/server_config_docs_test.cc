// The serve config reference (docs/reference/serve_config.md) cannot rot:
// its every-key block parses, and holds every key the parser reads.
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tutti/deployment/server_config.h"
#include "tutti/testing/doc_blocks.h"

namespace tutti {
namespace {

TEST(DocsTest, TheServeConfigReferenceHasEveryKey) {
  const std::string yaml = testing::MarkedBlock("docs/reference/serve_config.md", "serve-config");
  ASSERT_FALSE(yaml.empty()) << "no <!-- every-key: serve-config --> block";
  testing::FieldRecorder fields;
  absl::StatusOr<ServerConfig> config = ParseServerConfig(yaml);
  ASSERT_TRUE(config.ok()) << "the documented config is refused: " << config.status();
  EXPECT_TRUE(fields.Missing().empty()) << "keys the parser reads that the reference leaves out: "
                                         << absl::StrJoin(fields.Missing(), ", ");
}

}  // namespace
}  // namespace tutti
