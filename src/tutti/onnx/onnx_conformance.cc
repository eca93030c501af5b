#include "tutti/onnx/onnx_conformance.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/onnx/onnx_graph.h"
#include "tutti/onnx/onnx_ops.h"

namespace tutti {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<at::Tensor> ReadTensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in)) return absl::DataLossError(absl::StrCat(path.string(), ": not a tensor"));
  return TensorFromProto(proto);
}

// The tensors in dir/prefix0.pb, prefix1.pb, … in order.
absl::StatusOr<std::vector<at::Tensor>> ReadTensors(const fs::path& dir, const std::string& prefix) {
  std::vector<at::Tensor> out;
  for (int i = 0; fs::exists(dir / absl::StrCat(prefix, i, ".pb")); ++i) {
    absl::StatusOr<at::Tensor> t = ReadTensor(dir / absl::StrCat(prefix, i, ".pb"));
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  return out;
}

// Empty when `got` matches `want`, else what differs.
std::string Mismatch(const at::Tensor& got, const at::Tensor& want) {
  if (got.sizes() != want.sizes()) {
    return absl::StrCat("shape [", absl::StrJoin(got.sizes(), ","), "], expected [", absl::StrJoin(want.sizes(), ","),
                        "]");
  }
  if (got.scalar_type() != want.scalar_type()) {
    return absl::StrCat("datatype ", OnnxTypeName(OnnxType(got.scalar_type())), ", expected ",
                        OnnxTypeName(OnnxType(want.scalar_type())));
  }
  if (!at::isFloatingType(want.scalar_type())) {
    return at::equal(got, want) ? "" : "values differ";
  }
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  const at::Tensor close = (g - w).abs() <= 1e-7 + 1e-3 * w.abs();
  const at::Tensor same = (g == w) | (g.isnan() & w.isnan());  // infinities, NaNs
  const at::Tensor bad = ~(close | same);
  if (!bad.any().item<bool>()) return "";
  const int64_t at = bad.reshape({-1}).nonzero()[0].item<int64_t>();
  return absl::StrCat(bad.sum().item<int64_t>(), " of ", want.numel(), " values differ (element ", at, ": ",
                      g.reshape({-1})[at].item<double>(), ", expected ", w.reshape({-1})[at].item<double>(), ")");
}

}  // namespace

OnnxTestResult RunOnnxTest(const std::string& dir) {
  OnnxTestResult r;
  r.name = fs::path(dir).filename().string();
  std::ifstream in(fs::path(dir) / "model.onnx", std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) {
    r.detail = "model.onnx is not an ONNX model";
    return r;
  }
  std::set<std::string> ops;
  for (const onnx::NodeProto& n : model.graph().node()) ops.insert(n.op_type());
  r.ops.assign(ops.begin(), ops.end());
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = OnnxGraph::Load(model);
  if (!graph.ok()) {
    r.outcome = OnnxTestResult::Outcome::kRefused;
    r.detail = std::string(graph.status().message());
    return r;
  }
  int sets = 0;
  for (int s = 0; fs::is_directory(fs::path(dir) / absl::StrCat("test_data_set_", s)); ++s, ++sets) {
    const fs::path data = fs::path(dir) / absl::StrCat("test_data_set_", s);
    absl::StatusOr<std::vector<at::Tensor>> inputs = ReadTensors(data, "input_");
    absl::StatusOr<std::vector<at::Tensor>> expected = ReadTensors(data, "output_");
    for (const auto* read : {&inputs, &expected}) {
      if (read->ok()) continue;
      r.outcome = OnnxTestResult::Outcome::kRefused;  // a datatype the import refuses
      r.detail = std::string(read->status().message());
      return r;
    }
    absl::StatusOr<std::vector<at::Tensor>> got = (*graph)->Run(*inputs);
    if (!got.ok()) {
      r.detail = std::string(got.status().message());
      return r;
    }
    if (got->size() != expected->size()) {
      r.detail = absl::StrCat(got->size(), " outputs, expected ", expected->size());
      return r;
    }
    for (size_t i = 0; i < expected->size(); ++i) {
      const std::string wrong = Mismatch((*got)[i], (*expected)[i]);
      if (!wrong.empty()) {
        r.detail = absl::StrCat("test_data_set_", s, " output ", i, ": ", wrong);
        return r;
      }
    }
  }
  if (sets == 0) {
    r.detail = "no test_data_set_0";
    return r;
  }
  r.outcome = OnnxTestResult::Outcome::kPassed;
  return r;
}

absl::StatusOr<std::vector<OnnxTestResult>> RunOnnxTests(const std::string& root,
                                                         const std::function<void(const OnnxTestResult&)>& each) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat(root, ": no such folder (ONNX's test data: apt-get install "
                                            "libonnx-testdata)"));
  }
  std::vector<std::string> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<OnnxTestResult> results;
  for (const std::string& d : dirs) {
    results.push_back(RunOnnxTest(d));
    if (each) each(results.back());
  }
  return results;
}

}  // namespace tutti
