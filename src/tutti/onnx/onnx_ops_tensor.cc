// Shape, indexing and constant ops of the ONNX import.
#include <cmath>

#include "tutti/onnx/onnx_ops.h"

namespace tutti {
namespace {

at::Tensor Shape(const OnnxNode& n, const at::Tensor& x) {
  const int64_t rank = x.dim();
  auto clamp = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  const int64_t start = clamp(n.Int("start", 0)), end = clamp(n.Int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.size(d));
  return at::tensor(dims, at::kLong);
}

at::Tensor Reshape(const OnnxNode& n, const Tensors& in) {
  std::vector<int64_t> shape = IntsOf(in[1]);
  const bool allow_zero = n.Int("allowzero", 0) != 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) shape[d] = in[0].size(static_cast<int64_t>(d));
  }
  return in[0].reshape(shape);
}

at::Tensor Flatten(const OnnxNode& n, const at::Tensor& x) {
  int64_t axis = n.Int("axis", 1);  // in [-rank, rank]
  if (axis < 0) axis += x.dim();
  TORCH_CHECK(axis >= 0 && axis <= x.dim(), "axis ", n.Int("axis", 1), " is out of range for rank ", x.dim());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  return x.reshape({outer, outer == 0 ? 0 : x.numel() / outer});
}

at::Tensor Transpose(const OnnxNode& n, const at::Tensor& x) {
  std::vector<int64_t> perm = n.Ints("perm");
  if (perm.empty()) {
    for (int64_t d = x.dim(); d-- > 0;) perm.push_back(d);
  }
  return x.permute(perm);
}

// Squeeze and Unsqueeze take their axes as an attribute before opset 13,
// as an input from it.
std::vector<int64_t> AxesOf(const OnnxNode& n, const Tensors& in) {
  if (n.opset < 13) return n.Ints("axes");
  return Input(in, 1).defined() ? IntsOf(in[1]) : std::vector<int64_t>();
}

at::Tensor Squeeze(const OnnxNode& n, const Tensors& in) {
  std::vector<int64_t> axes = AxesOf(n, in);
  if (axes.empty()) return in[0].squeeze();
  for (int64_t& a : axes) a = NormalAxis(a, in[0].dim());
  std::sort(axes.rbegin(), axes.rend());
  at::Tensor y = in[0];
  for (int64_t a : axes) {
    TORCH_CHECK(y.size(a) == 1, "axis ", a, " has size ", y.size(a), ", not 1");
    y = y.squeeze(a);
  }
  return y;
}

at::Tensor Unsqueeze(const OnnxNode& n, const Tensors& in) {
  std::vector<int64_t> axes = AxesOf(n, in);
  const int64_t rank = in[0].dim() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) a = NormalAxis(a, rank);
  std::sort(axes.begin(), axes.end());
  at::Tensor y = in[0];
  for (int64_t a : axes) y = y.unsqueeze(a);
  return y;
}

// Elements start, start + step, … short of end along each axis, each bound
// clamped to the axis as ONNX says.
at::Tensor Slice(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = n.Ints("starts");
    ends = n.Ints("ends");
    axes = n.Ints("axes");
  } else {
    starts = IntsOf(in[1]);
    ends = IntsOf(in[2]);
    if (Input(in, 3).defined()) axes = IntsOf(in[3]);
    if (Input(in, 4).defined()) steps = IntsOf(in[4]);
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  at::Tensor y = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = NormalAxis(axes[i], x.dim()), dim = x.size(axis), step = steps[i];
    TORCH_CHECK(step != 0, "step 0");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      y = y.slice(axis, start, std::max(start, end), step);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const int64_t count = start > end ? (start - end - step - 1) / -step : 0;
      y = y.index_select(axis, at::arange(count, at::kLong) * step + start);
    }
  }
  return y;
}

at::Tensor Indices(const at::Tensor& indices, int64_t dim) {
  const at::Tensor i = indices.to(at::kLong);
  return at::where(i < 0, i + dim, i);
}

at::Tensor Gather(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const int64_t axis = NormalAxis(n.Int("axis", 0), x.dim());
  const at::Tensor picked = x.index_select(axis, Indices(in[1], x.size(axis)).reshape({-1}));
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
  for (int64_t d : in[1].sizes()) shape.push_back(d);
  shape.insert(shape.end(), x.sizes().begin() + axis + 1, x.sizes().end());
  return picked.reshape(shape);
}

at::Tensor GatherElements(const OnnxNode& n, const Tensors& in) {
  const int64_t axis = NormalAxis(n.Int("axis", 0), in[0].dim());
  return at::gather(in[0], axis, Indices(in[1], in[0].size(axis)));
}

at::Tensor Expand(const at::Tensor& x, const at::Tensor& shape) {
  return x.expand(at::infer_size(x.sizes(), IntsOf(shape)));
}

absl::Status CheckConstant(const OnnxNode& n) {
  for (const char* attr : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if (n.Has(attr)) {
      if (n.Has("value")) return TorchType(n.attributes.at("value").t().data_type()).status();
      return absl::OkStatus();
    }
  }
  return Refuse(n, "a constant other than a dense tensor, float(s) or int(s)");
}

at::Tensor Constant(const OnnxNode& n) {
  if (n.Has("value")) return *TensorFromProto(n.attributes.at("value").t());
  if (n.Has("value_float")) return at::scalar_tensor(n.Float("value_float", 0), at::kFloat);
  if (n.Has("value_int")) return at::scalar_tensor(n.Int("value_int", 0), at::kLong);
  if (n.Has("value_floats")) return at::tensor(n.Floats("value_floats"), at::kFloat);
  return at::tensor(n.Ints("value_ints"), at::kLong);
}

absl::Status CheckConstantOfShape(const OnnxNode& n) {
  return n.Has("value") ? TorchType(n.attributes.at("value").t().data_type()).status() : absl::OkStatus();
}

at::Tensor ConstantOfShape(const OnnxNode& n, const at::Tensor& shape) {
  const at::Tensor value = n.Has("value") ? *TensorFromProto(n.attributes.at("value").t())
                                          : at::zeros({1}, at::kFloat);
  return value.reshape({}).expand(IntsOf(shape)).contiguous();
}

at::Tensor Range(const Tensors& in) {
  const double start = in[0].item<double>(), limit = in[1].item<double>(), delta = in[2].item<double>();
  const auto count = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  return (at::arange(count, at::kDouble) * delta + start).to(in[0].scalar_type());
}

Tensors Split(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const int64_t axis = NormalAxis(n.Int("axis", 0), x.dim());
  std::vector<int64_t> sizes = n.opset < 13 ? n.Ints("split")
                                            : (Input(in, 1).defined() ? IntsOf(in[1]) : std::vector<int64_t>());
  if (sizes.empty()) {
    const auto parts = static_cast<int64_t>(n.outputs.size());
    TORCH_CHECK(x.size(axis) % parts == 0, "axis of size ", x.size(axis), " does not split into ", parts);
    sizes.assign(static_cast<size_t>(parts), x.size(axis) / parts);
  }
  return x.split_with_sizes(sizes, axis);
}

absl::Status CheckPad(const OnnxNode& n) {
  const std::string mode = n.String("mode", "constant");
  return mode == "constant" ? absl::OkStatus() : Refuse(n, "mode " + mode);
}

at::Tensor Pad(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const std::vector<int64_t> pads = n.opset < 11 ? n.Ints("pads") : IntsOf(in[1]);
  double value = n.opset < 11 ? n.Float("value", 0) : 0;
  if (n.opset >= 11 && Input(in, 2).defined()) value = in[2].item<double>();
  const auto rank = static_cast<size_t>(x.dim());
  std::vector<int64_t> torch_pads;  // the last dim first
  for (size_t d = rank; d-- > 0;) {
    torch_pads.push_back(pads[d]);
    torch_pads.push_back(pads[d + rank]);
  }
  return at::constant_pad_nd(x, torch_pads, value);
}

// The k largest (or smallest) along `axis`, ties to the lower index.
Tensors TopK(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const int64_t axis = NormalAxis(n.Int("axis", -1), x.dim());
  const int64_t k = n.opset < 10 ? n.Int("k", 1) : IntsOf(in[1])[0];
  const bool largest = n.Int("largest", 1) != 0;
  // A stable sort keeps equal values in index order.
  auto [values, indices] = at::sort(x, /*stable=*/true, axis, /*descending=*/largest);
  return {values.narrow(axis, 0, k), indices.narrow(axis, 0, k)};
}

at::Tensor OneHot(const OnnxNode& n, const Tensors& in) {
  const int64_t depth = static_cast<int64_t>(in[1].item<double>());
  at::Tensor i = in[0].to(at::kLong);
  i = at::where(i < 0, i + depth, i);
  const at::Tensor valid = (i >= 0) & (i < depth);
  at::Tensor hot = at::one_hot(at::where(valid, i, at::zeros_like(i)), depth) & valid.unsqueeze(-1);
  const int64_t rank = in[0].dim() + 1;
  hot = hot.movedim(-1, NormalAxis(n.Int("axis", -1), rank));
  const at::Tensor off = in[2][0], on = in[2][1];
  return at::where(hot.to(at::kBool), on, off);
}

absl::Status CheckEyeLike(const OnnxNode& n) {
  return n.Has("dtype") ? TorchType(static_cast<int>(n.Int("dtype", 0))).status() : absl::OkStatus();
}

at::Tensor EyeLike(const OnnxNode& n, const at::Tensor& x) {
  const at::ScalarType type = n.Has("dtype") ? *TorchType(static_cast<int>(n.Int("dtype", 0))) : x.scalar_type();
  const int64_t k = n.Int("k", 0);
  at::Tensor eye = at::zeros({x.size(0), x.size(1)}, at::kDouble);
  eye.diagonal(k).fill_(1);
  return eye.to(type);
}

absl::Status CheckScatterElements(const OnnxNode& n) {
  const std::string r = n.String("reduction", "none");
  return r == "none" || r == "add" || r == "mul" ? absl::OkStatus() : Refuse(n, "reduction " + r);
}

at::Tensor ScatterElements(const OnnxNode& n, const Tensors& in) {
  const int64_t axis = NormalAxis(n.Int("axis", 0), in[0].dim());
  const at::Tensor i = Indices(in[1], in[0].size(axis));
  const std::string r = n.String("reduction", "none");
  if (r == "none") return in[0].scatter(axis, i, in[2]);
  return in[0].scatter(axis, i, in[2], r == "add" ? "add" : "multiply");
}

// The slices of `data` that `indices`' last dim addresses, after
// batch_dims leading dims that data and indices share.
at::Tensor GatherNd(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& data = in[0];
  const int64_t b = n.Int("batch_dims", 0), q = in[1].size(-1);
  at::Tensor idx = in[1].to(at::kLong);
  std::vector<int64_t> batch_shape(data.sizes().begin(), data.sizes().begin() + b);
  int64_t batches = 1;
  for (int64_t d : batch_shape) batches *= d;
  const at::Tensor flat_data = data.reshape(
      [&] { std::vector<int64_t> s{batches}; s.insert(s.end(), data.sizes().begin() + b, data.sizes().end()); return s; }());
  const at::Tensor flat_idx = idx.reshape({batches, -1, q});
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < batches; ++i) {
    std::vector<at::indexing::TensorIndex> parts;
    for (int64_t j = 0; j < q; ++j) {
      at::Tensor c = flat_idx[i].select(1, j);
      parts.emplace_back(at::where(c < 0, c + flat_data.size(j + 1), c));
    }
    rows.push_back(flat_data[i].index(parts));
  }
  std::vector<int64_t> shape(in[1].sizes().begin(), in[1].sizes().end() - 1);
  shape.insert(shape.end(), data.sizes().begin() + b + q, data.sizes().end());
  return at::stack(rows).reshape(shape);
}

absl::Status CheckScatterNd(const OnnxNode& n) {
  const std::string r = n.String("reduction", "none");
  return r == "none" || r == "add" || r == "mul" ? absl::OkStatus() : Refuse(n, "reduction " + r);
}

at::Tensor ScatterNd(const OnnxNode& n, const Tensors& in) {
  at::Tensor out = in[0].clone();
  const int64_t q = in[1].size(-1);
  const at::Tensor idx = in[1].to(at::kLong).reshape({-1, q});
  std::vector<int64_t> update_shape{idx.size(0)};
  update_shape.insert(update_shape.end(), in[0].sizes().begin() + q, in[0].sizes().end());
  const at::Tensor updates = in[2].reshape(update_shape);
  const std::string r = n.String("reduction", "none");
  for (int64_t i = 0; i < idx.size(0); ++i) {
    std::vector<at::indexing::TensorIndex> at_index;
    for (int64_t j = 0; j < q; ++j) at_index.emplace_back(idx[i][j].item<int64_t>());
    at::Tensor slot = out.index(at_index);
    if (r == "add") {
      slot.add_(updates[i]);
    } else if (r == "mul") {
      slot.mul_(updates[i]);
    } else {
      slot.copy_(updates[i]);
    }
  }
  return out;
}

OnnxOp One(std::function<at::Tensor(const OnnxNode&, const Tensors&)> f, decltype(OnnxOp::check) check = nullptr) {
  return {std::move(check), [f](const OnnxNode& n, const Tensors& in) { return Tensors{f(n, in)}; }};
}

}  // namespace

void AddTensorOps(OnnxOpTable* ops) {
  auto& t = *ops;
  t["Identity"] = One([](const OnnxNode&, const Tensors& in) { return in[0]; });
  t["Shape"] = One([](const OnnxNode& n, const Tensors& in) { return Shape(n, in[0]); });
  t["Size"] = One([](const OnnxNode&, const Tensors& in) { return at::scalar_tensor(in[0].numel(), at::kLong); });
  t["Reshape"] = One(Reshape);
  t["Flatten"] = One([](const OnnxNode& n, const Tensors& in) { return Flatten(n, in[0]); });
  t["Transpose"] = One([](const OnnxNode& n, const Tensors& in) { return Transpose(n, in[0]); });
  t["Squeeze"] = One(Squeeze);
  t["Unsqueeze"] = One(Unsqueeze);
  t["Concat"] = One([](const OnnxNode& n, const Tensors& in) {
    return at::cat(in, NormalAxis(n.Int("axis", 0), in[0].dim()));
  });
  t["Slice"] = One(Slice);
  t["Gather"] = One(Gather);
  t["GatherElements"] = One(GatherElements);
  t["Expand"] = One([](const OnnxNode&, const Tensors& in) { return Expand(in[0], in[1]); });
  t["Tile"] = One([](const OnnxNode&, const Tensors& in) { return in[0].repeat(IntsOf(in[1])); });
  t["Constant"] = One([](const OnnxNode& n, const Tensors&) { return Constant(n); }, CheckConstant);
  t["ConstantOfShape"] = One([](const OnnxNode& n, const Tensors& in) { return ConstantOfShape(n, in[0]); },
                             CheckConstantOfShape);
  t["Range"] = One([](const OnnxNode&, const Tensors& in) { return Range(in); });
  t["Split"] = {nullptr, Split};
  t["Pad"] = One(Pad, CheckPad);
  t["TopK"] = {nullptr, TopK};
  t["NonZero"] = One([](const OnnxNode&, const Tensors& in) { return at::nonzero(in[0]).t().contiguous(); });
  t["Trilu"] = One([](const OnnxNode& n, const Tensors& in) {
    const int64_t k = Input(in, 1).defined() ? IntsOf(in[1])[0] : 0;
    return n.Int("upper", 1) != 0 ? at::triu(in[0], k) : at::tril(in[0], k);
  });
  t["OneHot"] = One(OneHot);
  t["EyeLike"] = One([](const OnnxNode& n, const Tensors& in) { return EyeLike(n, in[0]); }, CheckEyeLike);
  t["ScatterElements"] = One(ScatterElements, CheckScatterElements);
  t["GatherND"] = One(GatherNd);
  t["ScatterND"] = One(ScatterNd, CheckScatterNd);
}

}  // namespace tutti
