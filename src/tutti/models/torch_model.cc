#include "tutti/models/torch_model.h"

#include <dlfcn.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/architectures.h"
#include "tutti/onnx/onnx_graph.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

std::string ShapeString(c10::IntArrayRef sizes) { return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]"); }

// The part that differs between platforms: how to call the network.
class Network {
 public:
  virtual ~Network() = default;
  virtual torch::Tensor Forward(const torch::Tensor& input) = 0;
  // A model of several or typed tensors: its inputs in config order (a
  // tensor each; a BYTES one: a list of strings); its outputs in config
  // order.
  virtual std::vector<c10::IValue> ForwardAll(const std::vector<c10::IValue>& inputs) {
    return {Forward(inputs.at(0).toTensor())};
  }
  virtual int64_t Parameters() = 0;
  // A compute-then-update network's (else null).
  virtual OnlineNet* online() { return nullptr; }
};

class ScriptNetwork final : public Network {
 public:
  explicit ScriptNetwork(torch::jit::Module module) : module_(std::move(module)) { module_.eval(); }
  torch::Tensor Forward(const torch::Tensor& input) override {
    return module_.forward({input}).toTensor();
  }
  // forward(inputs…) returning one output, or a tuple (or a list of
  // tensors) of them.
  std::vector<c10::IValue> ForwardAll(const std::vector<c10::IValue>& inputs) override {
    const c10::IValue out = module_.forward(inputs);
    if (out.isTuple()) return out.toTupleRef().elements().vec();
    if (out.isTensorList()) {
      std::vector<c10::IValue> outputs;
      for (const c10::IValue& v : out.toListRef()) outputs.push_back(v);
      return outputs;
    }
    return {out};
  }
  int64_t Parameters() override {
    int64_t n = 0;
    for (const at::Tensor& p : module_.parameters()) n += p.numel();
    return n;
  }

 private:
  torch::jit::Module module_;
};

// An ONNX graph (onnx/onnx_graph.h) whose inputs and outputs are the
// config's, perhaps in another order.
class OnnxNetwork final : public Network {
 public:
  // `input_order[g]`: the config index of the graph's input g;
  // `output_order[k]`: the graph index of the config's output k.
  OnnxNetwork(std::unique_ptr<OnnxGraph> graph, std::vector<int> input_order, std::vector<int> output_order)
      : graph_(std::move(graph)), input_order_(std::move(input_order)), output_order_(std::move(output_order)) {}
  torch::Tensor Forward(const torch::Tensor& input) override { return ForwardAll({input})[0].toTensor(); }
  std::vector<c10::IValue> ForwardAll(const std::vector<c10::IValue>& inputs) override {
    std::vector<at::Tensor> ordered;
    for (int i : input_order_) ordered.push_back(inputs.at(i).toTensor());
    absl::StatusOr<std::vector<at::Tensor>> out = graph_->Run(ordered);
    if (!out.ok()) throw std::runtime_error(std::string(out.status().message()));
    std::vector<c10::IValue> outputs;
    for (int g : output_order_) outputs.push_back((*out)[g]);
    return outputs;
  }
  int64_t Parameters() override { return graph_->parameter_count(); }

 private:
  std::unique_ptr<OnnxGraph> graph_;
  const std::vector<int> input_order_, output_order_;
};

// For each of `graph`'s values, the index of the config tensor of its name
// (the two lists hold the same names), or why not.
absl::StatusOr<std::vector<int>> MatchByName(const ModelVersion& v, const char* what,
                                             const std::vector<OnnxValueInfo>& graph,
                                             const std::vector<TensorSpec>& config) {
  auto names = [](const auto& list) {
    std::vector<std::string> out;
    for (const auto& t : list) out.push_back(absl::StrCat("'", t.name, "'"));
    return absl::StrJoin(out, ", ");
  };
  std::vector<int> order;
  for (const OnnxValueInfo& g : graph) {
    const auto it = std::find_if(config.begin(), config.end(), [&](const TensorSpec& t) { return t.name == g.name; });
    if (it == config.end()) break;
    order.push_back(static_cast<int>(it - config.begin()));
  }
  if (graph.size() != config.size() || order.size() != graph.size()) {
    return absl::InvalidArgumentError(absl::StrCat(v.weights_path, ": the graph's ", what, " are ", names(graph),
                                                   ", the config's ", names(config), "; name them alike"));
  }
  return order;
}

// The config's inputs and outputs are the graph's, by name; the graph
// batches along its first dimension unless the model does not batch.
absl::StatusOr<std::unique_ptr<Network>> LoadOnnxNetwork(const ModelVersion& v) {
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<OnnxGraph> graph, OnnxGraph::LoadFile(v.weights_path));
  const ModelConfig& c = v.config;
  TUTTI_ASSIGN_OR_RETURN(std::vector<int> input_order, MatchByName(v, "inputs", graph->inputs(), c.inputs));
  TUTTI_ASSIGN_OR_RETURN(std::vector<int> outputs_to_config, MatchByName(v, "outputs", graph->outputs(), c.outputs));
  std::vector<int> output_order(outputs_to_config.size());
  for (size_t g = 0; g < outputs_to_config.size(); ++g) output_order[outputs_to_config[g]] = static_cast<int>(g);
  for (const OnnxValueInfo& in : graph->inputs()) {
    if (c.max_batch_size > 1 && !in.shape.empty() && in.shape[0] > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          v.weights_path, ": input '", in.name, "' has a fixed first dimension of ", in.shape[0],
          ", so the graph cannot batch; export it with a dynamic batch axis (torch.onnx.export(..., dynamic_axes="
          "{'", in.name, "': {0: 'batch'}})) or set max_batch_size: 1"));
    }
  }
  return std::make_unique<OnnxNetwork>(std::move(graph), std::move(input_order), std::move(output_order));
}

// The libtorch element type a tensor of `type` is given to the model as.
// libtorch has no UINT16–64: UINT16 and UINT32 widen to the next signed
// type, UINT64 is INT64 of the same bits. nullopt for BYTES (a list of
// strings).
std::optional<torch::ScalarType> TorchType(DataType type) {
  switch (type) {
    case DataType::kBool: return torch::kBool;
    case DataType::kUint8: return torch::kUInt8;
    case DataType::kInt8: return torch::kInt8;
    case DataType::kInt16: return torch::kInt16;
    case DataType::kUint16:
    case DataType::kInt32: return torch::kInt32;
    case DataType::kUint32:
    case DataType::kUint64:
    case DataType::kInt64: return torch::kInt64;
    case DataType::kFp16: return torch::kFloat16;
    case DataType::kFp32: return torch::kFloat32;
    case DataType::kFp64: return torch::kFloat64;
    case DataType::kBytes: break;
  }
  return std::nullopt;
}

// One input of `batch` items, held as `bytes` (tensor_record.h), as the
// model takes it: a tensor of TorchType, or for BYTES a list of the batch's
// strings, item by item.
c10::IValue ToTorch(const TensorSpec& spec, std::string& bytes, int batch) {
  std::vector<int64_t> shape{batch};
  const std::vector<int64_t>& item = spec.ModelShape();
  shape.insert(shape.end(), item.begin(), item.end());
  const int64_t n = batch * spec.ElementCount();
  auto widened = [&](auto narrow, torch::ScalarType type) {
    using Narrow = decltype(narrow);
    torch::Tensor t = torch::empty(shape, type);
    for (int64_t i = 0; i < n; ++i) {
      Narrow v;
      std::memcpy(&v, bytes.data() + i * sizeof(Narrow), sizeof(Narrow));
      if (type == torch::kInt32) t.data_ptr<int32_t>()[i] = v;
      else t.data_ptr<int64_t>()[i] = static_cast<int64_t>(v);
    }
    return t;
  };
  switch (spec.datatype) {
    case DataType::kBytes: {
      c10::List<std::string> strings;
      for (int64_t i = 0; i < n; ++i) {
        const absl::string_view e = BytesSlotElement(bytes.data() + i * spec.ElementSize(), spec.max_element_bytes);
        strings.push_back(std::string(e));
      }
      return strings;
    }
    case DataType::kUint16: return widened(uint16_t{}, torch::kInt32);
    case DataType::kUint32: return widened(uint32_t{}, torch::kInt64);
    default: return torch::from_blob(bytes.data(), shape, *TorchType(spec.datatype));
  }
}

// An output the model returned for `batch` items, in its record's bytes,
// or why it disagrees with `spec`.
absl::StatusOr<std::string> FromTorch(const std::string& model, const TensorSpec& spec, const c10::IValue& value,
                                      int batch) {
  const int64_t n = batch * spec.ElementCount();
  auto wrong = [&](absl::string_view what) {
    return absl::InternalError(absl::StrCat("model '", model, "' returned output '", spec.name, "' ", what));
  };
  if (spec.datatype == DataType::kBytes) {
    if (!value.isList() || (!value.toListRef().empty() && !value.toListRef()[0].isString())) {
      return wrong("as something other than a list of strings (List[str]), which a BYTES output is");
    }
    const c10::ArrayRef<c10::IValue> list = value.toListRef();
    if (static_cast<int64_t>(list.size()) != n) {
      return wrong(absl::StrCat("with ", list.size(), " strings for a batch of ", batch, "; its config declares ",
                                spec.ElementCount(), " per item"));
    }
    std::string out;
    out.reserve(n * spec.ElementSize());
    for (const c10::IValue& v : list) {
      const std::string& s = v.toStringRef();
      if (static_cast<int64_t>(s.size()) > spec.max_element_bytes) {
        return wrong(absl::StrCat("with an element of ", s.size(), " bytes; its max_element_bytes is ",
                                  spec.max_element_bytes));
      }
      AppendBytesSlot(s, spec.max_element_bytes, &out);
    }
    return out;
  }
  if (!value.isTensor()) return wrong("as something other than a tensor");
  const torch::Tensor y = value.toTensor().contiguous();
  if (y.scalar_type() != *TorchType(spec.datatype)) {
    return wrong(absl::StrCat("as ", c10::toString(y.scalar_type()), "; its config declares ",
                              DataTypeName(spec.datatype), ", which the model returns as ",
                              c10::toString(*TorchType(spec.datatype))));
  }
  if (y.dim() < 1 || y.size(0) != batch || y.numel() != n) {
    return wrong(absl::StrCat("of shape ", ShapeString(y.sizes()), " for a batch of ", batch,
                              "; its config declares ", spec.ElementCount(), " values per item"));
  }
  auto narrowed = [&](auto narrow) -> absl::StatusOr<std::string> {
    using Narrow = decltype(narrow);
    std::string out(n * sizeof(Narrow), '\0');
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = y.scalar_type() == torch::kInt32 ? y.data_ptr<int32_t>()[i] : y.data_ptr<int64_t>()[i];
      if (v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<Narrow>::max()) {
        return wrong(absl::StrCat("with ", v, ", outside ", DataTypeName(spec.datatype), "'s range"));
      }
      const Narrow u = static_cast<Narrow>(v);
      std::memcpy(out.data() + i * sizeof(Narrow), &u, sizeof(Narrow));
    }
    return out;
  };
  if (spec.datatype == DataType::kUint16) return narrowed(uint16_t{});
  if (spec.datatype == DataType::kUint32) return narrowed(uint32_t{});
  return std::string(static_cast<const char*>(y.data_ptr()), y.nbytes());
}

class BuiltinNetwork final : public Network {
 public:
  explicit BuiltinNetwork(std::shared_ptr<BuiltinNetImpl> net) : net_(std::move(net)) { net_->eval(); }
  torch::Tensor Forward(const torch::Tensor& input) override { return net_->forward(input); }
  std::vector<c10::IValue> ForwardAll(const std::vector<c10::IValue>& inputs) override {
    auto* typed = dynamic_cast<TypedNet*>(net_.get());
    if (typed == nullptr) return Network::ForwardAll(inputs);
    std::vector<torch::Tensor> xs;
    for (const c10::IValue& x : inputs) xs.push_back(x.toTensor());
    const std::vector<torch::Tensor> ys = typed->ForwardTyped(xs);
    return std::vector<c10::IValue>(ys.begin(), ys.end());
  }
  int64_t Parameters() override { return CountParameters(*net_); }
  OnlineNet* online() override { return dynamic_cast<OnlineNet*>(net_.get()); }

 private:
  std::shared_ptr<BuiltinNetImpl> net_;
};

// Members' networks over one shared prefix of stages (LoadPrefixGroup).
class PrefixGroupNetwork final : public Network {
 public:
  PrefixGroupNetwork(std::vector<std::shared_ptr<BuiltinNetImpl>> nets, int shared, std::vector<int64_t> item_shape)
      : nets_(std::move(nets)), shared_(shared), item_shape_(std::move(item_shape)) {
    for (auto& net : nets_) net->eval();
  }
  torch::Tensor Forward(const torch::Tensor& input) override {
    const int64_t batch = input.size(0);
    const torch::Tensor heads = input.select(1, 0).to(torch::kInt64);
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), item_shape_.begin(), item_shape_.end());
    const torch::Tensor trunk = nets_[0]->ForwardStages(input.narrow(1, 1, input.size(1) - 1).reshape(shape), 0,
                                                        shared_);
    const int stages = nets_[0]->stages();
    const int64_t first = heads.min().item<int64_t>(), last = heads.max().item<int64_t>();
    if (first < 0 || last >= static_cast<int64_t>(nets_.size())) {
      throw std::out_of_range(absl::StrCat("head ", first < 0 ? first : last, " is not one of the ", nets_.size(),
                                           " members' (0 … ", nets_.size() - 1, ")"));
    }
    if (first == last) return nets_[first]->ForwardStages(trunk, shared_, stages);
    torch::Tensor out;
    for (int64_t h = first; h <= last; ++h) {
      const torch::Tensor rows = heads.eq(h).nonzero().squeeze(1);
      if (rows.numel() == 0) continue;
      const torch::Tensor part = nets_[h]->ForwardStages(trunk.index_select(0, rows), shared_, stages);
      if (!out.defined()) {
        std::vector<int64_t> out_shape = part.sizes().vec();
        out_shape[0] = batch;
        out = torch::empty(out_shape, part.options());
      }
      out.index_copy_(0, rows, part);
    }
    return out;
  }
  int64_t Parameters() override {
    int64_t n = CountParameters(*nets_[0]);
    const auto shared = nets_[0]->StageModules();
    for (size_t j = 1; j < nets_.size(); ++j) {
      auto children = nets_[j]->named_children();
      for (int stage = shared_; stage < nets_[j]->stages(); ++stage) {
        for (const std::string& name : shared[stage]) n += CountParameters(*children[name]);
      }
    }
    return n;
  }

 private:
  std::vector<std::shared_ptr<BuiltinNetImpl>> nets_;
  const int shared_;
  const std::vector<int64_t> item_shape_;
};

class TorchModelImpl final : public TorchModel {
 public:
  TorchModelImpl(ModelConfig config, std::shared_ptr<Network> net)
      : config_(std::move(config)),
        net_(std::move(net)),
        parameters_(net_->Parameters()),
        typed_(!IsPlainFp32(config_.inputs) || !IsPlainFp32(config_.outputs)) {
    input_shape_ = {0};
    const std::vector<int64_t>& item = config_.inputs[0].ModelShape();
    input_shape_.insert(input_shape_.end(), item.begin(), item.end());
  }

  absl::Status RunAndUpdate(absl::Span<const float> input, int batch, absl::Span<const float> state,
                            std::vector<float>* output, std::vector<float>* next_state) override {
    OnlineNet* online = net_->online();
    if (online == nullptr) return TorchModel::RunAndUpdate(input, batch, state, output, next_state);
    if (batch < 1 || static_cast<int64_t>(input.size()) != batch * input_elements() ||
        (!state.empty() && static_cast<int64_t>(state.size()) != online->StateElements())) {
      return absl::InvalidArgumentError(absl::StrCat("batch of ", batch, " needs ", batch * input_elements(),
                                                     " input values and ", online->StateElements(),
                                                     " state values, got ", input.size(), " and ", state.size()));
    }
    try {
      c10::InferenceMode guard;
      const torch::Tensor x =
          torch::from_blob(const_cast<float*>(input.data()), {batch, input_elements()}, torch::kFloat32);
      const torch::Tensor s =
          state.empty() ? online->State()
                        : torch::from_blob(const_cast<float*>(state.data()), {static_cast<int64_t>(state.size())},
                                           torch::kFloat32);
      torch::Tensor next;
      const torch::Tensor y = online->ComputeThenUpdate(x, s, &next).contiguous();
      next = next.contiguous();
      output->assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
      next_state->assign(next.data_ptr<float>(), next.data_ptr<float>() + next.numel());
      return absl::OkStatus();
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("model '", config_.name, "' failed: ", e.what_without_backtrace()));
    }
  }

  absl::Status Run(absl::Span<const float> input, int batch, std::vector<float>* output) override {
    if (batch < 1 || static_cast<int64_t>(input.size()) != batch * input_elements()) {
      return absl::InvalidArgumentError(absl::StrCat("batch of ", batch, " needs ",
                                                     batch * input_elements(), " input values, got ",
                                                     input.size()));
    }
    try {
      c10::InferenceMode guard;
      if (typed_) return RunTyped(input, batch, output);
      std::vector<int64_t> shape = input_shape_;
      shape[0] = batch;
      torch::Tensor x = torch::from_blob(const_cast<float*>(input.data()), shape, torch::kFloat32);
      torch::Tensor y = net_->Forward(x).contiguous().to(torch::kFloat32);
      if (y.dim() < 1 || y.size(0) != batch || y.numel() != batch * output_elements()) {
        return absl::InternalError(absl::StrCat(
            "model '", config_.name, "' returned shape ", ShapeString(y.sizes()), " for a batch of ",
            batch, "; its config declares output '", config_.outputs[0].name, "' with ",
            output_elements(), " values per item"));
      }
      output->assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
      return absl::OkStatus();
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("model '", config_.name, "' failed: ", e.what_without_backtrace()));
    } catch (const std::exception& e) {  // TorchScript interpreter errors
      return absl::InternalError(absl::StrCat("model '", config_.name, "' failed: ", e.what()));
    }
  }

  absl::StatusOr<std::unique_ptr<TorchModel>> AtOtherBucket(const ModelConfig& bucket) const override {
    auto model = std::make_unique<TorchModelImpl>(StatelessForm(bucket), net_);
    TUTTI_RETURN_IF_ERROR(model->TrialRun());
    return model;
  }

  // A batch of one, of zeros: catches a config that disagrees with the
  // network.
  absl::Status TrialRun() {
    std::vector<float> in(input_elements()), out;
    return Run(in, 1, &out);
  }

  const ModelConfig& config() const override { return config_; }
  int64_t parameter_count() const override { return parameters_; }

 private:
  // A model of several or typed tensors: its records (tensor_record.h)
  // unpacked into one tensor per input, its outputs packed back.
  absl::Status RunTyped(absl::Span<const float> input, int batch, std::vector<float>* output) {
    std::vector<std::string> bytes = UnpackRecords(config_.inputs, input, batch);
    std::vector<c10::IValue> xs;
    for (size_t t = 0; t < config_.inputs.size(); ++t) xs.push_back(ToTorch(config_.inputs[t], bytes[t], batch));
    const std::vector<c10::IValue> ys = net_->ForwardAll(xs);
    if (ys.size() != config_.outputs.size()) {
      return absl::InternalError(absl::StrCat("model '", config_.name, "' returned ", ys.size(),
                                              " outputs; its config declares ", config_.outputs.size()));
    }
    std::vector<std::string> out(ys.size());
    for (size_t k = 0; k < ys.size(); ++k) {
      TUTTI_ASSIGN_OR_RETURN(out[k], FromTorch(config_.name, config_.outputs[k], ys[k], batch));
    }
    output->clear();
    PackRecords(config_.outputs, out, batch, output);
    return absl::OkStatus();
  }

  ModelConfig config_;
  std::shared_ptr<Network> net_;
  int64_t parameters_;
  const bool typed_;
  std::vector<int64_t> input_shape_;
};

absl::StatusOr<std::shared_ptr<BuiltinNetImpl>> LoadBuiltinNet(const ModelVersion& v) {
  TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, MakeBuiltinNet(v.config.architecture));
  std::shared_ptr<torch::nn::Module> module = net;
  torch::load(module, v.weights_path);
  return net;
}

absl::Status LoadError(const ModelVersion& v, const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  return absl::DataLossError(absl::StrCat(v.weights_path, ": cannot load as a ", PlatformName(v.config.platform),
                                          " model: ", c10 ? c10->what_without_backtrace() : e.what()));
}

absl::StatusOr<std::unique_ptr<Network>> LoadNetwork(const ModelVersion& v) {
  if (v.config.platform == Platform::kEmulated) {
    return absl::InvalidArgumentError(absl::StrCat("model '", v.config.name,
                                                   "' is platform emulated: it has no weights and "
                                                   "runs only on emulated executors"));
  }
  try {
    if (v.config.platform == Platform::kTorchScript) {
      return std::make_unique<ScriptNetwork>(torch::jit::load(v.weights_path));
    }
    if (v.config.platform == Platform::kOnnx) return LoadOnnxNetwork(v);
    TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, LoadBuiltinNet(v));
    return std::make_unique<BuiltinNetwork>(std::move(net));
  } catch (const std::exception& e) {
    return LoadError(v, e);
  }
}

// Makes `to`'s parameters and buffers in `modules` the very tensors of
// `from`'s, so that they are held once.
void ShareModules(BuiltinNetImpl& from, BuiltinNetImpl& to, const std::vector<std::string>& modules) {
  torch::NoGradGuard no_grad;
  auto from_children = from.named_children();
  auto to_children = to.named_children();
  for (const std::string& name : modules) {
    const torch::nn::Module& source = *from_children[name];
    torch::nn::Module& target = *to_children[name];
    for (auto& item : target.named_parameters()) item.value().set_data(source.named_parameters()[item.key()]);
    for (auto& item : target.named_buffers()) item.value().set_data(source.named_buffers()[item.key()]);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TorchModel>> TorchModel::LoadPrefixGroup(
    const ModelConfig& config, const std::vector<const ModelVersion*>& members, int shared_stages) {
  if (members.empty()) return absl::InvalidArgumentError("a prefix group needs members");
  std::vector<std::shared_ptr<BuiltinNetImpl>> nets;
  std::vector<std::string> first;
  for (const ModelVersion* v : members) {
    if (v->config.platform != Platform::kBuiltin || v->config.architecture != members[0]->config.architecture) {
      return absl::InvalidArgumentError(absl::StrCat("model '", v->config.name, "': prefix groups hold builtin "
                                                     "models of one architecture"));
    }
    try {
      TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, LoadBuiltinNet(*v));
      if (shared_stages < 0 || shared_stages >= net->stages()) {
        return absl::InvalidArgumentError(absl::StrCat("a prefix group of ", v->config.architecture,
                                                       " models shares 0 to ", net->stages() - 1, " stages, not ",
                                                       shared_stages));
      }
      const std::vector<std::string> hashes = StageHashes(*net);
      if (!v->config.stage_hashes.empty() && v->config.stage_hashes != hashes) {
        return absl::FailedPreconditionError(absl::StrCat(
            "model '", v->config.name, "': the stage hashes of its weights (", absl::StrJoin(hashes, ", "),
            ") differ from those its config records; train it again, or remove stage_hashes from its config"));
      }
      if (first.empty()) first = hashes;
      for (int stage = 0; stage < shared_stages; ++stage) {
        if (hashes[stage] != first[stage]) {
          return absl::FailedPreconditionError(absl::StrCat("model '", v->config.name, "': its layer stage ", stage,
                                                            " differs from model '", members[0]->config.name,
                                                            "''s, so they share no prefix of ", shared_stages,
                                                            " stages"));
        }
      }
      nets.push_back(std::move(net));
    } catch (const std::exception& e) {
      return LoadError(*v, e);
    }
  }
  const auto modules = nets[0]->StageModules();
  for (size_t j = 1; j < nets.size(); ++j) {
    for (int stage = 0; stage < shared_stages; ++stage) ShareModules(*nets[0], *nets[j], modules[stage]);
  }
  auto model = std::make_unique<TorchModelImpl>(
      config, std::make_unique<PrefixGroupNetwork>(std::move(nets), shared_stages, members[0]->config.inputs[0].shape));
  TUTTI_RETURN_IF_ERROR(model->TrialRun());  // of head 0
  return model;
}

absl::Status TorchModel::RunAndUpdate(absl::Span<const float>, int, absl::Span<const float>, std::vector<float>*,
                                      std::vector<float>*) {
  return absl::UnimplementedError(absl::StrCat("model '", config().name, "' is not a compute-then-update model"));
}

void SetTorchThreads(int threads) {
  if (threads <= 0) return;
  torch::set_num_threads(threads);
  // libtorch does not size OpenBLAS (Debian's BLAS for it), whose pool has a
  // worker per core that spins in sched_yield between calls: on a small
  // machine those spins took a third of the CPU from the executors and the
  // scheduler (perf, `tutti bench stateful`). Found at run time: the BLAS
  // may be another.
  using SetBlasThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

absl::StatusOr<std::unique_ptr<TorchModel>> TorchModel::Load(const ModelVersion& version) {
  const ModelConfig& c = version.config;
  for (const auto* tensors : {&c.inputs, &c.outputs}) {
    for (const TensorSpec& t : *tensors) {
      if (t.datatype == DataType::kBytes && c.platform != Platform::kTorchScript) {
        return absl::InvalidArgumentError(absl::StrCat(version.dir, ": tensor '", t.name, "' is BYTES, which only "
                                                       "TorchScript models take (as List[str]), not platform ",
                                                       PlatformName(c.platform)));
      }
    }
  }
  if (c.stateful() && !(IsPlainFp32(c.inputs) && IsPlainFp32(c.outputs))) {
    return absl::InvalidArgumentError(absl::StrCat(version.dir, ": a stateful model has one FP32 input and one "
                                                   "FP32 output"));
  }
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Network> net, LoadNetwork(version));
  auto model = std::make_unique<TorchModelImpl>(StatelessForm(c), std::move(net));
  TUTTI_RETURN_IF_ERROR(model->TrialRun());
  return model;
}

}  // namespace tutti
