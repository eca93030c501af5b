// Conformance of the ONNX import against ONNX's own backend test data
// (Debian's libonnx-testdata): each test folder holds model.onnx and
// test_data_set_*/ with input_*.pb and output_*.pb (TensorProtos). A test
// passes when every output matches the expected one within ONNX's backend
// tolerance (|a - e| <= atol + rtol·|e|, rtol 1e-3, atol 1e-7; NaN matches
// NaN; integers and booleans exactly); it is refused when the import
// refuses the model at load (an op, an attribute value, a datatype).
#ifndef TUTTI_ONNX_ONNX_CONFORMANCE_H_
#define TUTTI_ONNX_ONNX_CONFORMANCE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tutti {

inline constexpr char kOnnxTestDataDir[] = "/usr/share/libonnx-testdata/data/node";

struct OnnxTestResult {
  enum class Outcome { kPassed, kFailed, kRefused };
  std::string name;              // the test folder's name
  std::vector<std::string> ops;  // the model's op types, sorted, unique
  Outcome outcome = Outcome::kFailed;
  std::string detail;            // why it failed or was refused
};

// Runs one test folder.
OnnxTestResult RunOnnxTest(const std::string& dir);

// Runs every test folder under `root` in name order, calling `each` after
// each. NotFound when `root` is not a folder.
absl::StatusOr<std::vector<OnnxTestResult>> RunOnnxTests(const std::string& root,
                                                         const std::function<void(const OnnxTestResult&)>& each);

}  // namespace tutti

#endif  // TUTTI_ONNX_ONNX_CONFORMANCE_H_
