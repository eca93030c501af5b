// The op table of the ONNX import (onnx_graph.h): for each op of the
// default domain it covers, a check of a node at load and the node's
// computation on libtorch tensors. Internal to src/tutti/onnx.
#ifndef TUTTI_ONNX_ONNX_OPS_H_
#define TUTTI_ONNX_ONNX_OPS_H_

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tutti {

using Tensors = std::vector<at::Tensor>;
struct OnnxOp;

// A node as loaded: its attributes by name, the opset of its domain.
struct OnnxNode {
  std::string op_type, name;
  std::vector<std::string> inputs, outputs;  // "" for an optional one left out
  std::vector<int> input_slots, output_slots;  // OnnxGraph's; -1 for one left out
  std::map<std::string, onnx::AttributeProto> attributes;
  int opset = 0;
  const OnnxOp* op = nullptr;

  bool Has(const std::string& attr) const { return attributes.contains(attr); }
  int64_t Int(const std::string& attr, int64_t otherwise) const;
  float Float(const std::string& attr, float otherwise) const;
  std::string String(const std::string& attr, const std::string& otherwise) const;
  std::vector<int64_t> Ints(const std::string& attr) const;  // empty when absent
  std::vector<float> Floats(const std::string& attr) const;
  // The number of inputs given (trailing optional ones left out are not).
  int given_inputs() const;
  int given_outputs() const;
};

struct OnnxOp {
  // OK, or InvalidArgument naming what of the node the import does not
  // cover (an attribute value, a mode); null: every form is covered.
  std::function<absl::Status(const OnnxNode&)> check;
  // The node's outputs from its inputs (an undefined tensor for an optional
  // input left out; `in` may be shorter than the node's inputs). Throws
  // (c10::Error, std::exception) on inputs the op refuses.
  std::function<Tensors(const OnnxNode&, const Tensors& in)> run;
};

using OnnxOpTable = std::map<std::string, OnnxOp>;
const OnnxOpTable& OnnxOps();
void AddMathOps(OnnxOpTable* ops);     // onnx_ops_math.cc
void AddNnOps(OnnxOpTable* ops);       // onnx_ops_nn.cc
void AddTensorOps(OnnxOpTable* ops);   // onnx_ops_tensor.cc

// onnx::TensorProto_DataType ↔ libtorch. InvalidArgument names a datatype
// libtorch cannot hold (STRING, UINT16/32/64, COMPLEX).
absl::StatusOr<at::ScalarType> TorchType(int elem_type);
int OnnxType(at::ScalarType type);
std::string OnnxTypeName(int elem_type);
// A TensorProto's values (raw or typed fields); DataLoss for external data.
absl::StatusOr<at::Tensor> TensorFromProto(const onnx::TensorProto& proto);

// Helpers the op files share.
inline const at::Tensor& Input(const Tensors& in, size_t i) {
  static const at::Tensor* undefined = new at::Tensor();
  return i < in.size() ? in[i] : *undefined;
}
// A 1-D int64 tensor's values.
std::vector<int64_t> IntsOf(const at::Tensor& t);
// `axis` counted from the end when negative; throws when out of [-rank, rank).
int64_t NormalAxis(int64_t axis, int64_t rank);
absl::Status Refuse(const OnnxNode& node, const std::string& what);

}  // namespace tutti

#endif  // TUTTI_ONNX_ONNX_OPS_H_
