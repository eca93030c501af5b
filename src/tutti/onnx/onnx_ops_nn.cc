// Convolution, pooling, normalization and dropout ops of the ONNX import.
#include <algorithm>
#include <cmath>
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

// `v` (one value per channel) shaped to broadcast against x's channel dim.
at::Tensor PerChannel(const at::Tensor& v, const at::Tensor& x) {
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = v.numel();
  return v.reshape(shape);
}

// Transposed convolution without padding, then the output padding added
// at the end and the pads (given, or made to reach output_shape or, with
// auto_pad SAME_*, input × stride) cropped.
at::Tensor ConvTranspose(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const at::Tensor& weight = in[1];
  const size_t spatial = static_cast<size_t>(x.dim() - 2);
  std::vector<int64_t> strides = n.Ints("strides"), dilations = n.Ints("dilations"), pads = n.Ints("pads");
  std::vector<int64_t> out_pad = n.Ints("output_padding");
  const std::vector<int64_t> output_shape = n.Ints("output_shape");
  if (strides.empty()) strides.assign(spatial, 1);
  if (dilations.empty()) dilations.assign(spatial, 1);
  if (out_pad.empty()) out_pad.assign(spatial, 0);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  const std::vector<int64_t> zeros(spatial, 0);
  at::Tensor y = at::convolution(x, weight, c10::nullopt, strides, zeros, dilations, /*transposed=*/true, zeros,
                                 n.Int("group", 1));
  const std::string auto_pad = n.String("auto_pad", "NOTSET");
  for (size_t d = 0; d < spatial; ++d) {
    const auto dim = static_cast<int64_t>(d + 2);
    const int64_t full = y.size(dim) + out_pad[d];
    int64_t want = -1;
    if (!output_shape.empty()) {
      want = output_shape[output_shape.size() - spatial + d];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      want = x.size(dim) * strides[d];
    }
    int64_t begin = pads[d], end = pads[d + spatial];
    if (want >= 0) {  // total < 0 extends the end, as output padding would
      const int64_t total = full - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor
      begin = auto_pad == "SAME_UPPER" ? half : total - half;
      end = total - begin;
    }
    // A negative pad crops: the pads taken off, the output padding added.
    std::vector<int64_t> pad(2 * static_cast<size_t>(y.dim() - dim), 0);  // the last dim first
    const size_t slot = 2 * static_cast<size_t>(y.dim() - 1 - dim);
    pad[slot] = -begin;
    pad[slot + 1] = out_pad[d] - end;
    y = at::constant_pad_nd(y, pad);
  }
  if (Input(in, 2).defined()) y = y + PerChannel(in[2], y);
  return y;
}

// Each value over the sum of squares of `size` channels around it.
at::Tensor Lrn(const OnnxNode& n, const at::Tensor& x) {
  const int64_t size = n.Int("size", 1);
  const at::Tensor sq = (x * x).transpose(1, -1);  // channels last, to pad them
  const at::Tensor padded = at::constant_pad_nd(sq, {(size - 1) / 2, size - 1 - (size - 1) / 2});
  const at::Tensor sum = padded.unfold(-1, size, 1).sum(-1).transpose(1, -1);
  return x / at::pow(sum * (n.Float("alpha", 1e-4f) / size) + n.Float("bias", 1.0f), n.Float("beta", 0.75f));
}

at::Tensor MeanVarianceNorm(const OnnxNode& n, const at::Tensor& x) {
  std::vector<int64_t> axes = n.Ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  const at::Tensor mean = x.mean(axes, true);
  const at::Tensor var = ((x - mean) * (x - mean)).mean(axes, true);
  return (x - mean) / (at::sqrt(var) + 1e-9);
}

absl::Status CheckDepthToSpace(const OnnxNode& n) {
  const std::string mode = n.String("mode", "DCR");
  return mode == "DCR" || mode == "CRD" ? absl::OkStatus() : Refuse(n, "mode " + mode);
}

at::Tensor DepthToSpace(const OnnxNode& n, const at::Tensor& x) {
  const int64_t b = n.Int("blocksize", 1), N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  if (n.String("mode", "DCR") == "DCR") {
    return x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2}).reshape({N, C / (b * b), H * b, W * b});
  }
  return x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3}).reshape({N, C / (b * b), H * b, W * b});
}

at::Tensor SpaceToDepth(const OnnxNode& n, const at::Tensor& x) {
  const int64_t b = n.Int("blocksize", 1), N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  return x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4}).reshape({N, C * b * b, H / b, W / b});
}

absl::Status CheckResize(const OnnxNode& n) {
  if (n.opset < 11) return Refuse(n, "Resize before opset 11");
  const std::string mode = n.String("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return Refuse(n, "mode " + mode);
  const std::string c = n.String("coordinate_transformation_mode", "half_pixel");
  for (const char* known : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                            "tf_crop_and_resize"}) {
    if (c == known) return absl::OkStatus();
  }
  return Refuse(n, "coordinate_transformation_mode " + c);
}

// One axis of a resize: for each output position the input positions it
// reads and their weights, and whether it lies outside the input (then it
// takes extrapolation_value).
struct ResizeTaps {
  std::vector<int64_t> index;  // out × taps
  std::vector<double> weight;
  std::vector<bool> outside;
  int taps = 1;
};

ResizeTaps AxisTaps(const OnnxNode& n, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  const std::string mode = n.String("mode", "nearest");
  const std::string transform = n.String("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = n.String("nearest_mode", "round_prefer_floor");
  const double a = n.Float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = n.Int("exclude_outside", 0) != 0;
  ResizeTaps t;
  t.taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  for (int64_t o = 0; o < out; ++o) {
    double x = 0;
    if (transform == "half_pixel") {
      x = (o + 0.5) / scale - 0.5;
    } else if (transform == "pytorch_half_pixel") {
      x = out > 1 ? (o + 0.5) / scale - 0.5 : 0;
    } else if (transform == "align_corners") {  // over in × scale, unrounded, as ONNX's reference
      x = out == 1 ? 0 : o * static_cast<double>(in - 1) / (static_cast<double>(in) * scale - 1);
    } else if (transform == "asymmetric") {
      x = o / scale;
    } else if (transform == "tf_half_pixel_for_nn") {
      x = (o + 0.5) / scale;
    } else {  // tf_crop_and_resize
      x = out > 1 ? roi_start * (in - 1) + o * (roi_end - roi_start) * (in - 1) / (static_cast<double>(in) * scale - 1)
                  : 0.5 * (roi_start + roi_end) * (in - 1);
    }
    t.outside.push_back(transform == "tf_crop_and_resize" && (x < 0 || x > in - 1));
    auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (mode == "nearest") {
      const double f = std::floor(x);
      int64_t i = 0;
      if (nearest == "floor") {
        i = static_cast<int64_t>(f);
      } else if (nearest == "ceil") {
        i = static_cast<int64_t>(std::ceil(x));
      } else if (x - f == 0.5) {
        i = static_cast<int64_t>(nearest == "round_prefer_ceil" ? f + 1 : f);
      } else {
        i = static_cast<int64_t>(std::round(x));
      }
      t.index.push_back(clamp(i));
      t.weight.push_back(1);
      continue;
    }
    const auto x0 = static_cast<int64_t>(std::floor(x));
    const double r = x - static_cast<double>(x0);
    std::vector<double> w;
    if (mode == "linear") {
      w = {1 - r, r};
    } else {
      auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 <= d < 2
      auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };      // d < 1
      w = {far(1 + r), near(r), near(1 - r), far(2 - r)};
    }
    const int64_t first = mode == "linear" ? x0 : x0 - 1;
    double total = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t i = first + static_cast<int64_t>(k);
      if (exclude_outside && (i < 0 || i >= in)) w[k] = 0;
      total += w[k];
    }
    for (size_t k = 0; k < w.size(); ++k) {
      t.index.push_back(clamp(first + static_cast<int64_t>(k)));
      t.weight.push_back(exclude_outside ? w[k] / total : w[k]);
    }
  }
  return t;
}

// Separable: each axis whose size changes is resized in turn, as ONNX's
// reference does.
at::Tensor Resize(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  const int64_t rank = x.dim();
  std::vector<double> scales(static_cast<size_t>(rank), 1.0);
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  if (Input(in, 3).defined() && in[3].numel() > 0) {
    sizes = IntsOf(in[3]);
    for (int64_t d = 0; d < rank; ++d) scales[d] = static_cast<double>(sizes[d]) / static_cast<double>(x.size(d));
  } else {
    const at::Tensor sc = in[2].to(at::kDouble).contiguous();
    for (int64_t d = 0; d < rank; ++d) {
      scales[d] = sc[d].item<double>();
      sizes[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(d)) * scales[d]));
    }
  }
  std::vector<double> roi;
  if (Input(in, 1).defined() && in[1].numel() > 0) {
    const at::Tensor r = in[1].to(at::kDouble).contiguous();
    roi.assign(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
  }
  const double extrapolation = n.Float("extrapolation_value", 0);
  at::Tensor y = x.to(at::kDouble);
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] == x.size(d) && scales[d] == 1.0 && roi.empty()) continue;
    const ResizeTaps t = AxisTaps(n, x.size(d), sizes[d], scales[d], roi.empty() ? 0 : roi[d],
                                  roi.empty() ? 1 : roi[d + rank]);
    std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
    shape[d] = sizes[d];
    const at::Tensor index = at::tensor(t.index, at::kLong).reshape({sizes[d], t.taps});
    const at::Tensor weight = at::tensor(t.weight, at::kDouble).reshape({sizes[d], t.taps});
    at::Tensor sum = at::zeros({}, at::kDouble);
    for (int k = 0; k < t.taps; ++k) {
      sum = sum + y.index_select(d, index.select(1, k).contiguous()) * weight.select(1, k).reshape(shape);
    }
    std::vector<uint8_t> outside(t.outside.begin(), t.outside.end());
    const at::Tensor mask = at::tensor(outside, at::kByte).to(at::kBool).reshape(shape);
    y = at::where(mask, at::full({}, extrapolation, at::kDouble), sum);
  }
  return at::isFloatingType(x.scalar_type()) ? y.to(x.scalar_type()) : at::round(y).to(x.scalar_type());
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
  t["ConvTranspose"] = {CheckAutoPad,
                        [](const OnnxNode& n, const Tensors& in) { return Tensors{ConvTranspose(n, in)}; }};
  t["Resize"] = {CheckResize, [](const OnnxNode& n, const Tensors& in) { return Tensors{Resize(n, in)}; }};
  t["LRN"] = {nullptr, [](const OnnxNode& n, const Tensors& in) { return Tensors{Lrn(n, in[0])}; }};
  t["MeanVarianceNormalization"] = {nullptr, [](const OnnxNode& n, const Tensors& in) {
                                      return Tensors{MeanVarianceNorm(n, in[0])};
                                    }};
  t["DepthToSpace"] = {CheckDepthToSpace,
                       [](const OnnxNode& n, const Tensors& in) { return Tensors{DepthToSpace(n, in[0])}; }};
  t["SpaceToDepth"] = {nullptr, [](const OnnxNode& n, const Tensors& in) { return Tensors{SpaceToDepth(n, in[0])}; }};
  t["Dropout"] = {CheckDropout, [](const OnnxNode&, const Tensors& in) {
                    return Tensors{in[0], at::ones_like(in[0], at::kBool)};
                  }};
}

}  // namespace tutti
