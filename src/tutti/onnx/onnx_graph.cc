#include "tutti/onnx/onnx_graph.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/onnx/onnx_ops.h"

namespace tutti {
namespace {

constexpr int kMaxOpset = 17;  // ONNX 1.12, Debian 12's

absl::StatusOr<OnnxValueInfo> ValueInfo(const onnx::ValueInfoProto& v, const std::string& what) {
  if (!v.type().has_tensor_type()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", v.name(), "' is not a tensor (sequences, maps and "
                                                   "optionals are not supported)"));
  }
  const onnx::TypeProto::Tensor& t = v.type().tensor_type();
  TUTTI_RETURN_IF_ERROR(TorchType(t.elem_type()).status());
  OnnxValueInfo info{v.name(), t.elem_type(), {}};
  if (t.has_shape()) {
    for (const auto& d : t.shape().dim()) info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return info;
}

std::string ShapeText(absl::Span<const int64_t> shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

}  // namespace

int64_t OnnxNode::Int(const std::string& attr, int64_t otherwise) const {
  auto it = attributes.find(attr);
  return it == attributes.end() ? otherwise : it->second.i();
}
float OnnxNode::Float(const std::string& attr, float otherwise) const {
  auto it = attributes.find(attr);
  return it == attributes.end() ? otherwise : it->second.f();
}
std::string OnnxNode::String(const std::string& attr, const std::string& otherwise) const {
  auto it = attributes.find(attr);
  return it == attributes.end() ? otherwise : it->second.s();
}
std::vector<int64_t> OnnxNode::Ints(const std::string& attr) const {
  auto it = attributes.find(attr);
  return it == attributes.end() ? std::vector<int64_t>() : std::vector<int64_t>(it->second.ints().begin(),
                                                                                 it->second.ints().end());
}
std::vector<float> OnnxNode::Floats(const std::string& attr) const {
  auto it = attributes.find(attr);
  return it == attributes.end() ? std::vector<float>() : std::vector<float>(it->second.floats().begin(),
                                                                             it->second.floats().end());
}
int OnnxNode::given_inputs() const {
  int n = 0;
  for (size_t i = 0; i < inputs.size(); ++i) n += !inputs[i].empty();
  return n;
}
int OnnxNode::given_outputs() const {
  int n = 0;
  for (size_t i = 0; i < outputs.size(); ++i) n += !outputs[i].empty();
  return n;
}

absl::Status Refuse(const OnnxNode& node, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(node.op_type, ": ", what, " is not supported"));
}

std::vector<int64_t> IntsOf(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

int64_t NormalAxis(int64_t axis, int64_t rank) {
  TORCH_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

const OnnxOpTable& OnnxOps() {
  static const OnnxOpTable* table = [] {
    auto* t = new OnnxOpTable;
    AddMathOps(t);
    AddNnOps(t);
    AddTensorOps(t);
    return t;
  }();
  return *table;
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> out;
  for (const auto& [name, op] : OnnxOps()) out.push_back(name);
  return out;
}

absl::StatusOr<at::ScalarType> TorchType(int elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::FLOAT: return at::kFloat;
    case T::DOUBLE: return at::kDouble;
    case T::FLOAT16: return at::kHalf;
    case T::BFLOAT16: return at::kBFloat16;
    case T::UINT8: return at::kByte;
    case T::INT8: return at::kChar;
    case T::INT16: return at::kShort;
    case T::INT32: return at::kInt;
    case T::INT64: return at::kLong;
    case T::BOOL: return at::kBool;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("datatype ", OnnxTypeName(elem_type), " is not supported"));
}

int OnnxType(at::ScalarType type) {
  using T = onnx::TensorProto;
  switch (type) {
    case at::kFloat: return T::FLOAT;
    case at::kDouble: return T::DOUBLE;
    case at::kHalf: return T::FLOAT16;
    case at::kBFloat16: return T::BFLOAT16;
    case at::kByte: return T::UINT8;
    case at::kChar: return T::INT8;
    case at::kShort: return T::INT16;
    case at::kInt: return T::INT32;
    case at::kLong: return T::INT64;
    case at::kBool: return T::BOOL;
    default: return T::UNDEFINED;
  }
}

std::string OnnxTypeName(int elem_type) {
  return onnx::TensorProto_DataType_IsValid(elem_type)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type))
             : absl::StrCat("#", elem_type);
}

absl::StatusOr<at::Tensor> TensorFromProto(const onnx::TensorProto& p) {
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::DataLossError(absl::StrCat("tensor '", p.name(), "' keeps its data in an external file, which is "
                                            "not supported"));
  }
  TUTTI_ASSIGN_OR_RETURN(at::ScalarType type, TorchType(p.data_type()));
  const std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  at::Tensor t = at::empty(dims, at::TensorOptions().dtype(type));
  const size_t bytes = static_cast<size_t>(n) * t.element_size();
  auto mismatch = [&](size_t have) {
    return absl::DataLossError(absl::StrCat("tensor '", p.name(), "' of shape ", ShapeText(dims), " has ", have,
                                            " values or bytes"));
  };
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) return mismatch(p.raw_data().size());
    if (bytes > 0) std::memcpy(t.data_ptr(), p.raw_data().data(), bytes);  // ONNX: little-endian, as x86
    return t;
  }
  auto copy = [&](const auto& field, at::ScalarType from) -> absl::StatusOr<at::Tensor> {
    if (field.size() != n) return mismatch(field.size());
    using V = std::decay_t<decltype(*field.begin())>;
    std::vector<V> values(field.begin(), field.end());
    at::Tensor all = at::from_blob(values.data(), {n}, at::TensorOptions().dtype(from)).clone();
    return all.to(type).reshape(dims);
  };
  switch (type) {
    case at::kFloat: return copy(p.float_data(), at::kFloat);
    case at::kDouble: return copy(p.double_data(), at::kDouble);
    case at::kLong: return copy(p.int64_data(), at::kLong);
    case at::kHalf:
    case at::kBFloat16: {
      // Their bits, 16 to an int32.
      if (p.int32_data().size() != n) return mismatch(p.int32_data().size());
      std::vector<int16_t> bits(p.int32_data().begin(), p.int32_data().end());
      return at::from_blob(bits.data(), dims, at::TensorOptions().dtype(at::kShort)).clone().view(type);
    }
    default: return copy(p.int32_data(), at::kInt);
  }
}

OnnxGraph::~OnnxGraph() = default;

absl::StatusOr<std::unique_ptr<OnnxGraph>> OnnxGraph::LoadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return absl::DataLossError(absl::StrCat(path, ": not an ONNX model"));
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = Load(model);
  if (!graph.ok()) return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  return graph;
}

absl::StatusOr<std::unique_ptr<OnnxGraph>> OnnxGraph::Load(const onnx::ModelProto& model) {
  std::unique_ptr<OnnxGraph> g(new OnnxGraph);
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") g->opset_ = static_cast<int>(id.version());
  }
  if (g->opset_ < 1 || g->opset_ > kMaxOpset) {
    return absl::InvalidArgumentError(absl::StrCat("opset ", g->opset_, " of the default domain is not supported "
                                                   "(1 to ", kMaxOpset, ")"));
  }
  const onnx::GraphProto& graph = model.graph();
  std::map<std::string, int> slot_of;
  auto slot = [&slot_of](const std::string& name) {
    return slot_of.emplace(name, static_cast<int>(slot_of.size())).first->second;
  };
  for (const onnx::TensorProto& t : graph.initializer()) {
    absl::StatusOr<at::Tensor> tensor = TensorFromProto(t);
    if (!tensor.ok()) return absl::Status(tensor.status().code(), absl::StrCat("initializer '", t.name(), "': ",
                                                                               tensor.status().message()));
    g->initializers_.emplace_back(slot(t.name()), *std::move(tensor));
  }
  for (const onnx::ValueInfoProto& v : graph.input()) {
    if (slot_of.contains(v.name())) continue;  // an initializer's default
    TUTTI_ASSIGN_OR_RETURN(OnnxValueInfo info, ValueInfo(v, "input"));
    g->input_slots_.push_back(slot(v.name()));
    g->inputs_.push_back(std::move(info));
  }
  // Every refused op by name, then the first other refusal.
  std::set<std::string> unknown;
  absl::Status refused;
  for (const onnx::NodeProto& n : graph.node()) {
    auto node = std::make_unique<OnnxNode>();
    node->op_type = n.op_type();
    node->name = n.name();
    node->inputs.assign(n.input().begin(), n.input().end());
    node->outputs.assign(n.output().begin(), n.output().end());
    for (const std::string& name : node->inputs) {
      if (!name.empty() && !slot_of.contains(name) && refused.ok()) {
        refused = absl::InvalidArgumentError(absl::StrCat(n.op_type(), " node '", n.name(), "' reads '", name,
                                                          "', which no earlier node makes"));
      }
      node->input_slots.push_back(name.empty() || !slot_of.contains(name) ? -1 : slot_of.at(name));
    }
    for (const std::string& name : node->outputs) node->output_slots.push_back(name.empty() ? -1 : slot(name));
    node->opset = g->opset_;
    for (const onnx::AttributeProto& a : n.attribute()) node->attributes[a.name()] = a;
    auto op = OnnxOps().find(n.op_type());
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      unknown.insert(absl::StrCat(n.domain(), ".", n.op_type()));
    } else if (op == OnnxOps().end()) {
      unknown.insert(n.op_type());
    } else {
      node->op = &op->second;
      if (refused.ok() && op->second.check) refused = op->second.check(*node);
    }
    g->nodes_.push_back(std::move(node));
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported op", unknown.size() > 1 ? "s " : " ",
                                                   absl::StrJoin(unknown, ", ")));
  }
  TUTTI_RETURN_IF_ERROR(refused);
  for (const onnx::ValueInfoProto& v : graph.output()) {
    TUTTI_ASSIGN_OR_RETURN(OnnxValueInfo info, ValueInfo(v, "output"));
    if (!slot_of.contains(v.name())) {
      return absl::InvalidArgumentError(absl::StrCat("no node makes output '", v.name(), "'"));
    }
    g->output_slots_.push_back(slot_of.at(v.name()));
    g->outputs_.push_back(std::move(info));
  }
  g->slots_ = static_cast<int>(slot_of.size());
  return g;
}

int64_t OnnxGraph::parameter_count() const {
  int64_t n = 0;
  for (const auto& [slot, t] : initializers_) n += t.numel();
  return n;
}

absl::StatusOr<std::vector<at::Tensor>> OnnxGraph::Run(absl::Span<const at::Tensor> inputs) const {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the graph takes ", inputs_.size(), " inputs, got ",
                                                   inputs.size()));
  }
  std::vector<at::Tensor> values(static_cast<size_t>(slots_));
  for (const auto& [slot, t] : initializers_) values[slot] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OnnxValueInfo& info = inputs_[i];
    if (OnnxType(inputs[i].scalar_type()) != info.elem_type) {
      return absl::InvalidArgumentError(absl::StrCat("input '", info.name, "' is ", OnnxTypeName(OnnxType(
                                                         inputs[i].scalar_type())),
                                                     "; the graph expects ", OnnxTypeName(info.elem_type)));
    }
    bool fits = info.shape.empty() || static_cast<size_t>(inputs[i].dim()) == info.shape.size();
    for (size_t d = 0; fits && d < info.shape.size(); ++d) {
      fits = info.shape[d] < 0 || info.shape[d] == inputs[i].size(static_cast<int64_t>(d));
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("input '", info.name, "' has shape ",
                                                     ShapeText(inputs[i].sizes()), "; the graph expects ",
                                                     ShapeText(info.shape), " (-1: any)"));
    }
    values[input_slots_[i]] = inputs[i];
  }
  at::NoGradGuard no_grad;
  Tensors in;
  for (const std::unique_ptr<OnnxNode>& node : nodes_) {
    in.clear();
    for (int slot : node->input_slots) in.push_back(slot < 0 ? at::Tensor() : values[slot]);
    Tensors out;
    try {
      out = node->op->run(*node, in);
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat(node->op_type, " node '", node->name, "': ",
                                              e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat(node->op_type, " node '", node->name, "': ", e.what()));
    }
    for (size_t i = 0; i < node->output_slots.size() && i < out.size(); ++i) {
      if (node->output_slots[i] >= 0) values[node->output_slots[i]] = std::move(out[i]);
    }
  }
  std::vector<at::Tensor> result;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& y = values[output_slots_[i]];
    if (!y.defined()) return absl::InternalError(absl::StrCat("no node made output '", outputs_[i].name, "'"));
    result.push_back(y.contiguous());
  }
  return result;
}

}  // namespace tutti
