#include "tutti/delays/delay_injection.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The standard normal quantile function (Acklam's rational approximation,
// relative error below 1.2e-9).
double NormalQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  p = std::clamp(p, 1e-300, 1 - 1e-16);
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - kLow) return -NormalQuantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

constexpr double kZ999 = 3.090232306167813;  // NormalQuantile(0.999)

}  // namespace

DelayDistribution DelayDistribution::Constant(Duration d) {
  DelayDistribution x;
  x.kind_ = Kind::kConstant;
  x.a_ = static_cast<double>(std::max<Duration>(0, d));
  return x;
}

absl::StatusOr<DelayDistribution> DelayDistribution::Uniform(Duration lo, Duration hi) {
  if (lo < 0 || hi < lo) return absl::InvalidArgumentError("a uniform delay needs 0 <= low <= high");
  DelayDistribution x;
  x.kind_ = Kind::kUniform;
  x.a_ = static_cast<double>(lo);
  x.b_ = static_cast<double>(hi);
  return x;
}

absl::StatusOr<DelayDistribution> DelayDistribution::Exponential(Duration mean) {
  if (mean <= 0) return absl::InvalidArgumentError("an exponential delay needs a positive mean");
  DelayDistribution x;
  x.kind_ = Kind::kExponential;
  x.a_ = static_cast<double>(mean);
  return x;
}

absl::StatusOr<DelayDistribution> DelayDistribution::LogNormal(Duration median, Duration p999) {
  if (median <= 0 || p999 < median) {
    return absl::InvalidArgumentError("a log-normal delay needs 0 < median <= p999");
  }
  DelayDistribution x;
  x.kind_ = Kind::kLogNormal;
  x.a_ = std::log(static_cast<double>(median));
  x.b_ = std::log(static_cast<double>(p999) / static_cast<double>(median)) / kZ999;
  return x;
}

absl::StatusOr<DelayDistribution> DelayDistribution::FromQuantiles(std::map<double, Duration> points) {
  if (points.empty() || points.rbegin()->first != 1.0) {
    return absl::InvalidArgumentError("quantile points must include 1 (the largest delay)");
  }
  DelayDistribution x;
  x.kind_ = Kind::kPoints;
  Duration previous = 0;
  for (const auto& [q, v] : points) {
    if (!(q > 0 && q <= 1)) return absl::InvalidArgumentError(absl::StrCat("quantile ", q, " is not in (0, 1]"));
    if (v < previous) return absl::InvalidArgumentError("quantile points must not decrease");
    previous = v;
    x.points_.push_back({q, v});
  }
  return x;
}

Duration DelayDistribution::Quantile(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  switch (kind_) {
    case Kind::kConstant:
      return static_cast<Duration>(a_);
    case Kind::kUniform:
      return static_cast<Duration>(std::llround(a_ + u * (b_ - a_)));
    case Kind::kExponential:
      return static_cast<Duration>(std::llround(-a_ * std::log1p(-std::min(u, 1 - 1e-12))));
    case Kind::kLogNormal:
      return static_cast<Duration>(std::llround(std::exp(a_ + b_ * NormalQuantile(u))));
    case Kind::kPoints: {
      double q0 = 0;
      double v0 = 0;
      for (const auto& [q, v] : points_) {
        if (u <= q) {
          const double f = q > q0 ? (u - q0) / (q - q0) : 1;
          return static_cast<Duration>(std::llround(v0 + f * (static_cast<double>(v) - v0)));
        }
        q0 = q;
        v0 = static_cast<double>(v);
      }
      return points_.back().second;
    }
  }
  return 0;
}

double DelayInjection::ScaleOf(int gpu) const {
  auto it = compute_scale.find(gpu);
  return it == compute_scale.end() ? 1.0 : it->second;
}

Duration DelayInjection::Sample(const std::optional<DelayDistribution>& d, uint64_t stream, uint64_t key) const {
  if (!d) return 0;
  const uint64_t h = SplitMix64(SplitMix64(seed ^ (stream * 0x9e3779b97f4a7c15ULL)) ^ key);
  return d->Quantile(static_cast<double>(h >> 11) * 0x1.0p-53);
}

LateTimerClock::LateTimerClock(Clock* base, const DelayInjection* injection, std::function<void(Duration)> on_late)
    : base_(base), injection_(injection), on_late_(std::move(on_late)) {}

TimerId LateTimerClock::ScheduleAt(Time when, Callback callback) {
  const Time due = std::max(when, base_->Now());  // a timer set in the past is due now
  const Duration late = injection_->Sample(injection_->timer, kTimerStream, static_cast<uint64_t>(due));
  return base_->ScheduleAt(due + late, [this, due, cb = std::move(callback)] {
    if (on_late_) on_late_(base_->Now() - due);
    cb();
  });
}

}  // namespace tutti
