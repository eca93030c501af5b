// Elementwise, reduction and linear-algebra ops of the ONNX import.
#include <cmath>
#include <limits>

#include "tutti/onnx/onnx_ops.h"

namespace tutti {
namespace {

using Fn1 = at::Tensor (*)(const at::Tensor&);

OnnxOp Unary(std::function<at::Tensor(const OnnxNode&, const at::Tensor&)> f) {
  return {nullptr, [f](const OnnxNode& n, const Tensors& in) { return Tensors{f(n, in[0])}; }};
}
OnnxOp Plain(Fn1 f) {
  return Unary([f](const OnnxNode&, const at::Tensor& x) { return f(x); });
}
// ONNX binary ops keep their inputs' type; libtorch would promote.
OnnxOp Binary(std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> f) {
  return {nullptr, [f](const OnnxNode&, const Tensors& in) { return Tensors{f(in[0], in[1])}; }};
}
// Max, Min, Sum, Mean: any number of inputs, broadcast.
OnnxOp Variadic(std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> f, bool mean = false) {
  return {nullptr, [f, mean](const OnnxNode&, const Tensors& in) {
            at::Tensor acc = in[0];
            for (size_t i = 1; i < in.size(); ++i) acc = f(acc, in[i]);
            if (mean) acc = acc / static_cast<double>(in.size());
            return Tensors{acc.to(in[0].scalar_type())};
          }};
}

bool Floating(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

at::Tensor Div(const at::Tensor& a, const at::Tensor& b) {
  return Floating(a) ? at::div(a, b) : at::div(a, b, "trunc").to(a.scalar_type());
}

// The axes a reduction runs over: the `axes` input from `input_from`
// opsets on, else the attribute; empty: every axis (unless
// noop_with_empty_axes, then none: returns false).
bool ReduceAxes(const OnnxNode& n, const Tensors& in, int input_from, std::vector<int64_t>* axes) {
  *axes = n.opset >= input_from ? (Input(in, 1).defined() ? IntsOf(in[1]) : std::vector<int64_t>()) : n.Ints("axes");
  const int64_t rank = in[0].dim();
  if (axes->empty()) {
    if (n.Int("noop_with_empty_axes", 0) != 0) return false;
    for (int64_t d = 0; d < rank; ++d) axes->push_back(d);
  }
  for (int64_t& a : *axes) a = NormalAxis(a, rank);
  return true;
}

// A reduction `f(x, axes, keepdim)`; the axes input arrives at `input_from`.
OnnxOp Reduce(std::function<at::Tensor(const at::Tensor&, at::IntArrayRef, bool)> f, int input_from = 18) {
  return {nullptr, [f, input_from](const OnnxNode& n, const Tensors& in) {
            std::vector<int64_t> axes;
            if (!ReduceAxes(n, in, input_from, &axes)) return Tensors{in[0]};
            const bool keep = n.Int("keepdims", 1) != 0;
            if (in[0].dim() == 0) return Tensors{f(in[0].reshape({1}), {0}, keep).reshape({})};
            return Tensors{f(in[0], axes, keep).to(in[0].scalar_type())};
          }};
}

at::Tensor Prod(const at::Tensor& x, at::IntArrayRef axes, bool keep) {
  std::vector<int64_t> sorted(axes.begin(), axes.end());
  std::sort(sorted.rbegin(), sorted.rend());
  at::Tensor out = x;
  for (int64_t a : sorted) out = at::prod(out, a, /*keepdim=*/true);
  if (!keep) {
    for (int64_t a : sorted) out = out.squeeze(a);
  }
  return out;
}

OnnxOp ArgReduce(bool max) {
  return {nullptr, [max](const OnnxNode& n, const Tensors& in) {
            const int64_t axis = NormalAxis(n.Int("axis", 0), in[0].dim());
            const bool keep = n.Int("keepdims", 1) != 0;
            if (n.Int("select_last_index", 0) == 0) {
              return Tensors{max ? at::argmax(in[0], axis, keep) : at::argmin(in[0], axis, keep)};
            }
            const at::Tensor flipped = in[0].flip({axis});
            const at::Tensor i = max ? at::argmax(flipped, axis, keep) : at::argmin(flipped, axis, keep);
            return Tensors{in[0].size(axis) - 1 - i};
          }};
}

// Softmax, LogSoftmax, Hardmax: before opset 13 over the input coerced to
// 2-D at `axis` (default 1), from 13 along `axis` (default -1).
OnnxOp SoftmaxLike(std::function<at::Tensor(const at::Tensor&, int64_t)> f) {
  return {nullptr, [f](const OnnxNode& n, const Tensors& in) {
            const at::Tensor& x = in[0];
            if (n.opset >= 13) return Tensors{f(x, NormalAxis(n.Int("axis", -1), x.dim()))};
            const int64_t axis = NormalAxis(n.Int("axis", 1), x.dim());
            int64_t rows = 1;
            for (int64_t d = 0; d < axis; ++d) rows *= x.size(d);
            return Tensors{f(x.reshape({rows, -1}), 1).reshape(x.sizes())};
          }};
}

at::Tensor Hardmax(const at::Tensor& x, int64_t axis) {
  return at::one_hot(at::argmax(x, axis), x.size(axis)).movedim(-1, axis).to(x.scalar_type());
}

at::Tensor Gemm(const OnnxNode& n, const Tensors& in) {
  const at::Tensor a = n.Int("transA", 0) ? in[0].t() : in[0];
  const at::Tensor b = n.Int("transB", 0) ? in[1].t() : in[1];
  const float alpha = n.Float("alpha", 1.0f);
  // addmm, as torch's Linear computes, so that an exported Linear answers
  // bit for bit as the module it came from.
  if (Input(in, 2).defined() && a.is_floating_point()) {
    return at::addmm(in[2].to(a.scalar_type()), a, b, n.Float("beta", 1.0f), alpha);
  }
  at::Tensor y = at::matmul(a, b) * alpha;
  if (Input(in, 2).defined()) y = y + in[2] * n.Float("beta", 1.0f);
  return y.to(in[0].scalar_type());
}

at::Tensor Clip(const OnnxNode& n, const Tensors& in) {
  const at::Tensor& x = in[0];
  if (n.opset < 11) {
    return at::clamp(x, n.Float("min", -std::numeric_limits<float>::infinity()),
                     n.Float("max", std::numeric_limits<float>::infinity()));
  }
  c10::optional<at::Tensor> lo, hi;
  if (Input(in, 1).defined()) lo = in[1];
  if (Input(in, 2).defined()) hi = in[2];
  if (!lo && !hi) return x;
  return at::clamp(x, lo, hi);
}

at::Tensor CumSum(const OnnxNode& n, const Tensors& in) {
  const int64_t axis = NormalAxis(IntsOf(in[1])[0], in[0].dim());
  const bool reverse = n.Int("reverse", 0) != 0;
  at::Tensor x = reverse ? in[0].flip({axis}) : in[0];
  at::Tensor y = at::cumsum(x, axis).to(x.scalar_type());
  if (n.Int("exclusive", 0) != 0) y = y - x;
  return reverse ? y.flip({axis}) : y;
}

absl::Status CheckCast(const OnnxNode& n) {
  const absl::StatusOr<at::ScalarType> to = TorchType(static_cast<int>(n.Int("to", 0)));
  return to.ok() ? absl::OkStatus() : Refuse(n, "casting to " + OnnxTypeName(static_cast<int>(n.Int("to", 0))));
}

}  // namespace

void AddMathOps(OnnxOpTable* ops) {
  auto& t = *ops;
  t["Abs"] = Plain(at::abs);
  t["Neg"] = Plain(at::neg);
  t["Exp"] = Plain(at::exp);
  t["Log"] = Plain(at::log);
  t["Sqrt"] = Plain(at::sqrt);
  t["Reciprocal"] = Plain(at::reciprocal);
  t["Relu"] = Plain(at::relu);
  t["Sigmoid"] = Plain(at::sigmoid);
  t["Tanh"] = Plain(at::tanh);
  t["Erf"] = Plain(at::erf);
  t["Ceil"] = Plain(at::ceil);
  t["Floor"] = Plain(at::floor);
  t["Round"] = Plain(at::round);  // half to even, as ONNX
  t["Sign"] = Plain(at::sign);
  t["Sin"] = Plain(at::sin);
  t["Cos"] = Plain(at::cos);
  t["Tan"] = Plain(at::tan);
  t["Asin"] = Plain(at::asin);
  t["Acos"] = Plain(at::acos);
  t["Atan"] = Plain(at::atan);
  t["Sinh"] = Plain(at::sinh);
  t["Cosh"] = Plain(at::cosh);
  t["Asinh"] = Plain(at::asinh);
  t["Acosh"] = Plain(at::acosh);
  t["Atanh"] = Plain(at::atanh);
  t["Not"] = Plain(at::logical_not);
  t["IsNaN"] = Plain(at::isnan);
  t["Softplus"] = Unary([](const OnnxNode&, const at::Tensor& x) { return at::log(at::exp(x) + 1); });
  t["Softsign"] = Unary([](const OnnxNode&, const at::Tensor& x) { return x / (at::abs(x) + 1); });
  t["IsInf"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    at::Tensor inf = at::zeros_like(x, at::kBool);
    if (n.Int("detect_positive", 1) != 0) inf = inf | at::isposinf(x);
    if (n.Int("detect_negative", 1) != 0) inf = inf | at::isneginf(x);
    return inf;
  });
  t["LeakyRelu"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    return at::where(x >= 0, x, x * n.Float("alpha", 0.01f));
  });
  t["Elu"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    return at::where(x >= 0, x, (at::exp(x) - 1) * n.Float("alpha", 1.0f));
  });
  t["Celu"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    const float alpha = n.Float("alpha", 1.0f);
    return at::clamp_min(x, 0) + at::clamp_max((at::exp(x / alpha) - 1) * alpha, 0);
  });
  t["Selu"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    const float alpha = n.Float("alpha", 1.67326319217681884765625f);
    const float gamma = n.Float("gamma", 1.05070102214813232421875f);
    return at::where(x > 0, x * gamma, (at::exp(x) * alpha - alpha) * gamma);
  });
  t["HardSigmoid"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    return at::clamp(x * n.Float("alpha", 0.2f) + n.Float("beta", 0.5f), 0, 1);
  });
  t["HardSwish"] = Unary([](const OnnxNode&, const at::Tensor& x) { return x * at::clamp(x / 6 + 0.5, 0, 1); });
  t["ThresholdedRelu"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    return at::where(x > n.Float("alpha", 1.0f), x, at::zeros_like(x));
  });
  t["Shrink"] = Unary([](const OnnxNode& n, const at::Tensor& x) {
    const float bias = n.Float("bias", 0.0f), lambd = n.Float("lambd", 0.5f);
    return at::where(x < -lambd, x + bias, at::where(x > lambd, x - bias, at::zeros_like(x))).to(x.scalar_type());
  });
  // Before opset 7 a slope of one value per channel applies along dim 1.
  t["PRelu"] = {nullptr, [](const OnnxNode& n, const Tensors& in) {
                  at::Tensor slope = in[1];
                  if (n.opset < 7 && slope.dim() == 1 && in[0].dim() > 2 && slope.numel() == in[0].size(1)) {
                    std::vector<int64_t> shape(static_cast<size_t>(in[0].dim() - 1), 1);
                    shape[0] = slope.numel();
                    slope = slope.reshape(shape);
                  }
                  return Tensors{at::where(in[0] < 0, in[0] * slope, in[0])};
                }};
  t["Clip"] = {nullptr, [](const OnnxNode& n, const Tensors& in) { return Tensors{Clip(n, in)}; }};

  t["Add"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b).to(a.scalar_type()); });
  t["Sub"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b).to(a.scalar_type()); });
  t["Mul"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b).to(a.scalar_type()); });
  t["Div"] = Binary(Div);
  t["Pow"] = Binary([](const at::Tensor& a, const at::Tensor& b) {
    return at::pow(a.to(at::kDouble), b.to(at::kDouble)).to(a.scalar_type());
  });
  t["Mod"] = {nullptr, [](const OnnxNode& n, const Tensors& in) {
                return Tensors{n.Int("fmod", 0) != 0 ? at::fmod(in[0], in[1]) : at::remainder(in[0], in[1])};
              }};
  t["Equal"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::eq(a, b); });
  t["Greater"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::gt(a, b); });
  t["Less"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::lt(a, b); });
  t["GreaterOrEqual"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::ge(a, b); });
  t["LessOrEqual"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::le(a, b); });
  t["And"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); });
  t["Or"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::logical_or(a, b); });
  t["Xor"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::logical_xor(a, b); });
  t["Where"] = {nullptr, [](const OnnxNode&, const Tensors& in) { return Tensors{at::where(in[0], in[1], in[2])}; }};
  t["Max"] = Variadic([](const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); });
  t["Min"] = Variadic([](const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); });
  t["Sum"] = Variadic([](const at::Tensor& a, const at::Tensor& b) { return a + b; });
  t["Mean"] = Variadic([](const at::Tensor& a, const at::Tensor& b) { return a + b; }, /*mean=*/true);

  t["Einsum"] = {nullptr, [](const OnnxNode& n, const Tensors& in) {
                   return Tensors{at::einsum(n.String("equation", ""), in)};
                 }};
  t["Det"] = Plain(at::linalg_det);
  t["MatMul"] = Binary([](const at::Tensor& a, const at::Tensor& b) { return at::matmul(a, b); });
  t["Gemm"] = {nullptr, [](const OnnxNode& n, const Tensors& in) { return Tensors{Gemm(n, in)}; }};
  t["CumSum"] = {nullptr, [](const OnnxNode& n, const Tensors& in) { return Tensors{CumSum(n, in)}; }};
  t["Softmax"] = SoftmaxLike([](const at::Tensor& x, int64_t axis) { return at::softmax(x, axis); });
  t["LogSoftmax"] = SoftmaxLike([](const at::Tensor& x, int64_t axis) { return at::log_softmax(x, axis); });
  t["Hardmax"] = SoftmaxLike(Hardmax);
  t["ArgMax"] = ArgReduce(true);
  t["ArgMin"] = ArgReduce(false);

  t["ReduceSum"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x, a, k); }, 13);
  t["ReduceMean"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::mean(x, a, k); });
  t["ReduceMax"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::amax(x, a, k); });
  t["ReduceMin"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::amin(x, a, k); });
  t["ReduceProd"] = Reduce(Prod);
  t["ReduceL1"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(at::abs(x), a, k); });
  t["ReduceL2"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) {
    return at::sqrt(at::sum(x * x, a, k));
  });
  t["ReduceSumSquare"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x * x, a, k); });
  t["ReduceLogSum"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::log(at::sum(x, a, k)); });
  t["ReduceLogSumExp"] = Reduce([](const at::Tensor& x, at::IntArrayRef a, bool k) {
    return at::logsumexp(x.to(at::kDouble), a, k);
  });

  t["Cast"] = {CheckCast, [](const OnnxNode& n, const Tensors& in) {
                 return Tensors{in[0].to(*TorchType(static_cast<int>(n.Int("to", 0))))};
               }};
  t["CastLike"] = {nullptr, [](const OnnxNode&, const Tensors& in) { return Tensors{in[0].to(in[1].scalar_type())}; }};
}

}  // namespace tutti
