// `tutti onnx`: what the ONNX import makes of a model file, and its
// conformance against ONNX's own node tests.
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/cli/command_util.h"
#include "tutti/onnx/onnx_conformance.h"
#include "tutti/onnx/onnx_graph.h"
#include "tutti/onnx/onnx_ops.h"

namespace tutti::cli {
namespace {

constexpr char kOnnxHelp[] =
    "usage: tutti onnx <inspect|conformance> [flags]\n\n"
    "ONNX models (platform onnx, Triton's onnxruntime_onnx) run as operations on\n"
    "libtorch tensors inside the torch executor.\n\n"
    "  inspect MODEL.onnx  load a model as `tutti serve` would: its opset, inputs,\n"
    "                      outputs and parameters, or every op it refuses, by name\n"
    "  conformance         run ONNX's backend node tests (libonnx-testdata): the\n"
    "                      share of the supported ops' tests that pass, the tests\n"
    "                      refused at load and why; exits 1 if any test fails\n\n"
    "See `tutti onnx <action> --help` for flags.\n";

std::string Dims(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

int Inspect(const Args& args) {
  FlagSet flags("tutti onnx inspect MODEL.onnx",
                "Loads an ONNX model as `tutti serve` would and prints its opset, inputs and\n"
                "outputs (-1: a dimension of any size) and parameter count; exits 1 naming\n"
                "every op the import does not cover.");
  const bool has_file = !args.empty() && args[0].rfind("--", 0) != 0;
  absl::Status parsed = flags.Parse(Args(args.begin() + (has_file ? 1 : 0), args.end()));
  if (parsed.ok() && flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (!parsed.ok() || !has_file) {
    std::cerr << "error: " << (parsed.ok() ? "missing MODEL.onnx" : parsed.message()) << "\n\n" << flags.Help();
    return 2;
  }
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = OnnxGraph::LoadFile(args[0]);
  if (!graph.ok()) return Fail(graph.status());
  std::cout << absl::StrFormat("%s: opset %d, %d parameters\n", args[0], (*graph)->opset(),
                               (*graph)->parameter_count());
  for (const auto& [what, list] : {std::pair{"input ", &(*graph)->inputs()}, std::pair{"output", &(*graph)->outputs()}}) {
    for (const OnnxValueInfo& v : *list) {
      std::cout << absl::StrFormat("  %s %-20s %-8s %s\n", what, v.name, OnnxTypeName(v.elem_type), Dims(v.shape));
    }
  }
  return 0;
}

int Conformance(const Args& args) {
  std::string data = kOnnxTestDataDir;
  bool verbose = false;
  FlagSet flags("tutti onnx conformance [--data DIR] [--verbose]",
                "Runs ONNX's backend node tests against the import: each test's model.onnx\n"
                "on its test_data_set_*, outputs compared within ONNX's backend tolerance\n"
                "(rtol 1e-3, atol 1e-7). Prints, per op, the tests that passed; then the\n"
                "share of the supported ops' tests that pass, and the tests refused at load\n"
                "with the op or attribute that refused them. Exits 1 if any test fails.");
  flags.String("data", &data, "the node tests' folder (Debian's libonnx-testdata)");
  flags.Bool("verbose", &verbose, "print every test's outcome");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  using Outcome = OnnxTestResult::Outcome;
  absl::StatusOr<std::vector<OnnxTestResult>> results = RunOnnxTests(data, [verbose](const OnnxTestResult& r) {
    if (!verbose && r.outcome != Outcome::kFailed) return;
    const char* word = r.outcome == Outcome::kPassed ? "pass" : r.outcome == Outcome::kFailed ? "FAIL" : "refused";
    std::cerr << absl::StrFormat("%-7s %s%s%s\n", word, r.name, r.detail.empty() ? "" : ": ", r.detail);
  });
  if (!results.ok()) return Fail(results.status());
  struct Count {
    int passed = 0, run = 0;
  };
  std::map<std::string, Count> by_op;
  std::map<std::string, int> unsupported_ops;      // op -> tests refused for it
  std::map<std::string, int> refused_otherwise;    // reason -> tests
  int passed = 0, failed = 0, refused = 0;
  const std::vector<std::string> supported = SupportedOnnxOps();
  const std::set<std::string> known(supported.begin(), supported.end());
  for (const OnnxTestResult& r : *results) {
    if (r.outcome == Outcome::kRefused) {
      ++refused;
      bool op_missing = false;
      for (const std::string& op : r.ops) {
        if (!known.contains(op)) {
          ++unsupported_ops[op];
          op_missing = true;
        }
      }
      if (!op_missing) ++refused_otherwise[r.detail];
      continue;
    }
    (r.outcome == Outcome::kPassed ? passed : failed)++;
    for (const std::string& op : r.ops) {
      ++by_op[op].run;
      by_op[op].passed += r.outcome == Outcome::kPassed;
    }
  }
  std::cout << absl::StrFormat("%-24s %7s %5s\n", "op", "passed", "run");
  for (const auto& [op, c] : by_op) std::cout << absl::StrFormat("%-24s %7d %5d\n", op, c.passed, c.run);
  const int run = passed + failed;
  std::cout << absl::StrFormat(
      "\nONNX node tests (%s): %d of %d tests of the supported ops pass (%.1f%%); %d of %d tests refused at load.\n",
      data, passed, run, run > 0 ? 100.0 * passed / run : 0.0, refused, results->size());
  std::cout << absl::StrFormat("%d ops supported: %s\n", supported.size(), absl::StrJoin(supported, " "));
  std::vector<std::string> missing;
  for (const auto& [op, n] : unsupported_ops) missing.push_back(absl::StrFormat("%s (%d)", op, n));
  std::cout << absl::StrFormat("Unsupported ops (tests refused): %s\n", absl::StrJoin(missing, ", "));
  if (!refused_otherwise.empty()) {
    std::cout << "Refused for an attribute or datatype (tests):\n";
    for (const auto& [why, n] : refused_otherwise) std::cout << absl::StrFormat("  %s (%d)\n", why, n);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int OnnxCommand(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kOnnxHelp;
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "inspect") return Inspect(rest);
  if (args[0] == "conformance") return Conformance(rest);
  std::cerr << "tutti onnx: unknown action '" << args[0] << "'\n\n" << kOnnxHelp;
  return 2;
}

}  // namespace tutti::cli
