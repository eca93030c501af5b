// Convolution, pooling, normalization and dropout ops of the ONNX import.
#include <limits>

#include "tutti/onnx/onnx_ops.h"

namespace tutti {
namespace {

// A sliding window over the spatial dims (all but N and C): its pads as
// begin and end per dim, auto_pad resolved.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  bool symmetric() const { return begin == end; }
  bool padded() const {
    for (size_t d = 0; d < begin.size(); ++d) {
      if (begin[d] != 0 || end[d] != 0) return true;
    }
    return false;
  }
};

absl::Status CheckAutoPad(const OnnxNode& n) {
  const std::string pad = n.String("auto_pad", "NOTSET");
  if (pad == "NOTSET" || pad == "VALID" || pad == "SAME_UPPER" || pad == "SAME_LOWER") return absl::OkStatus();
  return Refuse(n, "auto_pad " + pad);
}

Window WindowOf(const OnnxNode& n, const at::Tensor& x, std::vector<int64_t> kernel) {
  const size_t spatial = static_cast<size_t>(x.dim() - 2);
  TORCH_CHECK(kernel.size() == spatial, "kernel of rank ", kernel.size(), " for ", spatial, " spatial dims");
  Window w{std::move(kernel), n.Ints("strides"), n.Ints("dilations"), {}, {}};
  if (w.strides.empty()) w.strides.assign(spatial, 1);
  if (w.dilations.empty()) w.dilations.assign(spatial, 1);
  const std::vector<int64_t> pads = n.Ints("pads");
  const std::string auto_pad = n.String("auto_pad", "NOTSET");
  for (size_t d = 0; d < spatial; ++d) {
    int64_t begin = 0, end = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t in = x.size(static_cast<int64_t>(d + 2));
      const int64_t out = (in + w.strides[d] - 1) / w.strides[d];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1 - in);
      begin = auto_pad == "SAME_LOWER" ? (total + 1) / 2 : total / 2;
      end = total - begin;
    } else if (auto_pad == "NOTSET" && !pads.empty()) {
      begin = pads[d];
      end = pads[d + spatial];
    }
    w.begin.push_back(begin);
    w.end.push_back(end);
  }
  return w;
}

at::Tensor Pad(const at::Tensor& x, const Window& w, double value) {
  std::vector<int64_t> pad;  // the last dim first
  for (size_t d = w.begin.size(); d-- > 0;) {
    pad.push_back(w.begin[d]);
    pad.push_back(w.end[d]);
  }
  return at::constant_pad_nd(x, pad, value);
}

at::Tensor Conv(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const at::Tensor& weight = in[1];
  const Window w = WindowOf(n, x, weight.sizes().slice(2).vec());
  const bool native = w.symmetric();
  const std::vector<int64_t> zeros(w.begin.size(), 0);
  c10::optional<at::Tensor> bias;
  if (Input(in, 2).defined()) bias = in[2];
  return at::convolution(native ? x : Pad(x, w, 0), weight, bias, w.strides, native ? w.begin : zeros, w.dilations,
                         /*transposed=*/false, zeros, n.Int("group", 1));
}

absl::Status CheckMaxPool(const OnnxNode& n) {
  if (n.given_outputs() > 1) return Refuse(n, "the Indices output");
  return CheckAutoPad(n);
}

at::Tensor MaxPool(const OnnxNode& n, const Tensors& in) {
  const at::Tensor x = at::isFloatingType(in[0].scalar_type()) ? in[0] : in[0].to(at::kDouble);
  const Window w = WindowOf(n, x, n.Ints("kernel_shape"));
  bool native = w.symmetric();
  for (size_t d = 0; native && d < w.begin.size(); ++d) native = w.begin[d] <= w.kernel[d] / 2;
  const std::vector<int64_t> zeros(w.begin.size(), 0);
  const at::Tensor xp = native ? x : Pad(x, w, -std::numeric_limits<double>::infinity());
  const std::vector<int64_t>& padding = native ? w.begin : zeros;
  const bool ceil = n.Int("ceil_mode", 0) != 0;
  at::Tensor y;
  switch (w.kernel.size()) {
    case 1: y = at::max_pool1d(xp, w.kernel, w.strides, padding, w.dilations, ceil); break;
    case 2: y = at::max_pool2d(xp, w.kernel, w.strides, padding, w.dilations, ceil); break;
    case 3: y = at::max_pool3d(xp, w.kernel, w.strides, padding, w.dilations, ceil); break;
    default: TORCH_CHECK(false, "pooling over ", w.kernel.size(), " spatial dims");
  }
  return y.to(in[0].scalar_type());
}

at::Tensor AvgPool(const at::Tensor& x, const Window& w, bool ceil) {
  const std::vector<int64_t> zeros(w.begin.size(), 0);
  switch (w.kernel.size()) {
    case 1: return at::avg_pool1d(x, w.kernel, w.strides, zeros, ceil, true);
    case 2: return at::avg_pool2d(x, w.kernel, w.strides, zeros, ceil, true);
    case 3: return at::avg_pool3d(x, w.kernel, w.strides, zeros, ceil, true);
    default: TORCH_CHECK(false, "pooling over ", w.kernel.size(), " spatial dims");
  }
  return {};
}

// Pads are averaged in when count_include_pad, else each window is divided
// by the count of the input's elements in it.
at::Tensor AveragePool(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const Window w = WindowOf(n, x, n.Ints("kernel_shape"));
  const bool ceil = n.Int("ceil_mode", 0) != 0;
  if (!w.padded()) return AvgPool(x, w, ceil);
  if (n.Int("count_include_pad", 0) != 0) return AvgPool(Pad(x, w, 0), w, ceil);
  return AvgPool(Pad(x, w, 0), w, ceil) / AvgPool(Pad(at::ones_like(x), w, 0), w, ceil);
}

std::vector<int64_t> SpatialDims(const at::Tensor& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// `v` (one value per channel) shaped to broadcast against x's channel dim.
at::Tensor PerChannel(const at::Tensor& v, const at::Tensor& x) {
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = v.numel();
  return v.reshape(shape);
}

absl::Status CheckBatchNorm(const OnnxNode& n) {
  if (n.given_outputs() > 1 || n.Int("training_mode", 0) != 0) return Refuse(n, "training mode");
  if (n.Int("spatial", 1) != 1) return Refuse(n, "spatial = 0");
  return absl::OkStatus();
}

at::Tensor BatchNorm(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const double eps = n.Float("epsilon", 1e-5f);
  return (x - PerChannel(in[3], x)) / at::sqrt(PerChannel(in[4], x) + eps) * PerChannel(in[1], x) +
         PerChannel(in[2], x);
}

Tensors LayerNorm(const OnnxNode& n, const Tensors& in) {
  const at::Tensor x = in[0].to(at::kFloat);
  const int64_t axis = NormalAxis(n.Int("axis", -1), x.dim());
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  const at::Tensor mean = x.mean(dims, /*keepdim=*/true);
  const at::Tensor centered = x - mean;
  const at::Tensor inv_std = at::rsqrt((centered * centered).mean(dims, true) + n.Float("epsilon", 1e-5f));
  at::Tensor y = centered * inv_std * in[1];
  if (Input(in, 2).defined()) y = y + in[2];
  return {y.to(in[0].scalar_type()), mean, inv_std};
}

at::Tensor InstanceNorm(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const std::vector<int64_t> dims = SpatialDims(x);
  const at::Tensor mean = x.mean(dims, true);
  const at::Tensor var = ((x - mean) * (x - mean)).mean(dims, true);
  return (x - mean) / at::sqrt(var + n.Float("epsilon", 1e-5f)) * PerChannel(in[1], x) + PerChannel(in[2], x);
}

absl::Status CheckDropout(const OnnxNode& n) {
  if (n.opset >= 12 && n.inputs.size() > 2 && !n.inputs[2].empty()) return Refuse(n, "training mode");
  if (n.opset < 7 && n.Int("is_test", 0) == 0) return Refuse(n, "training mode (is_test 0)");
  return absl::OkStatus();
}

}  // namespace

void AddNnOps(OnnxOpTable* ops) {
  auto& t = *ops;
  t["Conv"] = {CheckAutoPad, [](const OnnxNode& n, const Tensors& in) { return Tensors{Conv(n, in)}; }};
  t["MaxPool"] = {CheckMaxPool, [](const OnnxNode& n, const Tensors& in) { return Tensors{MaxPool(n, in)}; }};
  t["AveragePool"] = {CheckAutoPad,
                      [](const OnnxNode& n, const Tensors& in) { return Tensors{AveragePool(n, in)}; }};
  t["GlobalAveragePool"] = {nullptr, [](const OnnxNode&, const Tensors& in) {
                              return Tensors{in[0].mean(SpatialDims(in[0]), /*keepdim=*/true)};
                            }};
  t["GlobalMaxPool"] = {nullptr, [](const OnnxNode&, const Tensors& in) {
                          return Tensors{at::amax(in[0], SpatialDims(in[0]), /*keepdim=*/true)};
                        }};
  t["BatchNormalization"] = {CheckBatchNorm,
                             [](const OnnxNode& n, const Tensors& in) { return Tensors{BatchNorm(n, in)}; }};
  t["LayerNormalization"] = {nullptr, LayerNorm};
  t["InstanceNormalization"] = {nullptr,
                                [](const OnnxNode& n, const Tensors& in) { return Tensors{InstanceNorm(n, in)}; }};
  t["Dropout"] = {CheckDropout, [](const OnnxNode&, const Tensors& in) {
                    return Tensors{in[0], at::ones_like(in[0], at::kBool)};
                  }};
}

}  // namespace tutti
