// The model config reference (docs/reference/model_config.md) cannot rot:
// each of its every-key blocks parses, and together they hold every key
// the parser reads.
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tutti/repository/model_config.h"
#include "tutti/testing/doc_blocks.h"

namespace tutti {
namespace {

TEST(DocsTest, TheModelConfigReferenceHasEveryKey) {
  testing::FieldRecorder fields;
  for (const char* block : {"model-config-builtin", "model-config-ensemble", "model-config-stateful",
                            "model-config-online", "model-config-variable",
                            "model-config-reshape", "model-config-strings"}) {
    const std::string yaml = testing::MarkedBlock("docs/reference/model_config.md", block);
    ASSERT_FALSE(yaml.empty()) << "no <!-- every-key: " << block << " --> block";
    absl::StatusOr<ModelConfig> config = ParseModelConfig(yaml);
    EXPECT_TRUE(config.ok()) << block << " is refused: " << config.status();
  }
  EXPECT_TRUE(fields.Missing().empty()) << "keys the parser reads that the reference leaves out: "
                                         << absl::StrJoin(fields.Missing(), ", ");
}

}  // namespace
}  // namespace tutti
