#include "tutti/onnx/onnx_conformance.h"

#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/onnx/onnx_graph.h"

namespace tutti {
namespace {

using Outcome = OnnxTestResult::Outcome;

// ONNX's own node tests (scripts/setup.sh installs them): every test the
// import does not refuse at load passes, and the ops the demo, torchvision
// classifiers and BERT-style encoders export to each pass some test.
TEST(OnnxConformanceTest, EveryNodeTestOfTheSupportedOpsPasses) {
  ASSERT_TRUE(std::filesystem::is_directory(kOnnxTestDataDir)) << "run scripts/setup.sh (libonnx-testdata)";
  absl::StatusOr<std::vector<OnnxTestResult>> results = RunOnnxTests(kOnnxTestDataDir, nullptr);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<std::string> failed;
  std::set<std::string> passed_ops;
  int passed = 0;
  for (const OnnxTestResult& r : *results) {
    if (r.outcome == Outcome::kFailed) failed.push_back(absl::StrCat(r.name, ": ", r.detail));
    if (r.outcome != Outcome::kPassed) continue;
    ++passed;
    passed_ops.insert(r.ops.begin(), r.ops.end());
  }
  // And the whole models converted from PyTorch, its operators, the simple graphs.
  for (const char* more : {"pytorch-converted", "pytorch-operator", "simple"}) {
    const std::string dir = std::filesystem::path(kOnnxTestDataDir).parent_path() / more;
    absl::StatusOr<std::vector<OnnxTestResult>> others = RunOnnxTests(dir, nullptr);
    ASSERT_TRUE(others.ok()) << others.status();
    for (const OnnxTestResult& r : *others) {
      if (r.outcome == Outcome::kFailed) failed.push_back(absl::StrCat(more, "/", r.name, ": ", r.detail));
    }
  }
  EXPECT_THAT(failed, ::testing::IsEmpty()) << absl::StrJoin(failed, "\n");
  EXPECT_GE(results->size(), 900u);
  EXPECT_GE(passed, 600);
  for (const char* op : {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul", "Relu", "Clip",
                         "Add", "Softmax", "LayerNormalization", "Erf", "Gather", "Reshape", "Transpose", "Slice",
                         "Concat", "Unsqueeze", "Where", "Cast", "ReduceMean", "BatchNormalization", "Flatten",
                         "ConvTranspose", "Resize", "TopK", "Einsum"}) {
    EXPECT_TRUE(passed_ops.contains(op)) << op << " passes no node test";
  }
}

TEST(OnnxConformanceTest, AMissingFolderIsNamed) {
  absl::StatusOr<std::vector<OnnxTestResult>> results = RunOnnxTests("/no/such/folder", nullptr);
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(results.status().message(), ::testing::HasSubstr("libonnx-testdata"));
}

}  // namespace
}  // namespace tutti
