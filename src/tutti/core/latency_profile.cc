#include "tutti/core/latency_profile.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tutti {

LinearFit FitLinear(const std::vector<ProfilePoint>& points) {
  const double n = static_cast<double>(points.size());
  if (points.empty()) return {};
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ProfilePoint& p : points) {
    const double x = p.batch, y = static_cast<double>(p.latency);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double denom = n * sxx - sx * sx;
  if (denom == 0) return {0.0, sy / n};
  const double alpha = (n * sxy - sx * sy) / denom;
  return {alpha, (sy - alpha * sx) / n};
}

LatencyProfile::LatencyProfile(std::vector<ProfilePoint> points, std::vector<Duration> dense)
    : points_(std::move(points)), dense_(std::move(dense)), fit_(FitLinear(points_)) {}

absl::StatusOr<LatencyProfile> LatencyProfile::FromPoints(std::vector<ProfilePoint> points,
                                                          Monotonicity monotonicity) {
  if (points.empty()) return absl::InvalidArgumentError("latency profile has no points");
  std::sort(points.begin(), points.end(),
            [](const ProfilePoint& a, const ProfilePoint& b) { return a.batch < b.batch; });
  for (size_t i = 0; i < points.size(); ++i) {
    const ProfilePoint& p = points[i];
    if (p.batch < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("latency profile: batch size %d is not positive", p.batch));
    }
    if (p.latency <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "latency profile: latency at batch %d is %d ns; it must be positive", p.batch,
          p.latency));
    }
    if (i > 0 && points[i - 1].batch == p.batch) {
      return absl::InvalidArgumentError(
          absl::StrFormat("latency profile: batch size %d appears twice", p.batch));
    }
  }
  if (points.front().batch != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "latency profile must include batch size 1 (smallest given: %d)", points.front().batch));
  }
  for (size_t i = 1; i < points.size(); ++i) {
    ProfilePoint& cur = points[i];
    const ProfilePoint& prev = points[i - 1];
    if (cur.latency >= prev.latency) continue;
    if (monotonicity == Monotonicity::kReject) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "latency profile is not monotone: l(%d) = %.3f ms is below l(%d) = %.3f ms",
          cur.batch, ToMillis(cur.latency), prev.batch, ToMillis(prev.latency)));
    }
    cur.latency = prev.latency;
  }
  std::vector<Duration> dense(points.back().batch);
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const ProfilePoint& a = points[i];
    const ProfilePoint& b = points[i + 1];
    for (int x = a.batch; x < b.batch; ++x) {
      dense[x - 1] = a.latency + (b.latency - a.latency) * (x - a.batch) / (b.batch - a.batch);
    }
  }
  dense.back() = points.back().latency;
  return LatencyProfile(std::move(points), std::move(dense));
}

absl::StatusOr<LatencyProfile> LatencyProfile::Linear(Duration alpha, Duration beta,
                                                      int max_batch) {
  if (alpha < 0 || beta < 0 || alpha + beta <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "linear profile needs alpha >= 0, beta >= 0 and alpha + beta > 0 (got %d ns, %d ns)",
        alpha, beta));
  }
  if (max_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("linear profile: max batch %d is not positive", max_batch));
  }
  std::vector<ProfilePoint> points;
  std::vector<Duration> dense(max_batch);
  for (int b = 1; b <= max_batch; ++b) dense[b - 1] = alpha * b + beta;
  points.push_back({1, dense.front()});
  if (max_batch > 1) points.push_back({max_batch, dense.back()});
  return LatencyProfile(std::move(points), std::move(dense));
}

double LatencyProfile::Throughput(int b) const {
  return static_cast<double>(b) / ToSeconds(Latency(b));
}

int LatencyProfile::MaxBatchWithin(Duration budget) const {
  // dense_ is non-decreasing: count the entries <= budget.
  return static_cast<int>(std::upper_bound(dense_.begin(), dense_.end(), budget) -
                          dense_.begin());
}

int LatencyProfile::MaxBatchForRate(Duration slo, double rate_per_s) const {
  // ℓ(b) + b/r is increasing in b.
  return LargestFitting(max_batch(), [&](int b) {
    return static_cast<double>(Latency(b)) + b / rate_per_s * 1e9 <= static_cast<double>(slo);
  });
}

std::string LatencyProfile::DebugString() const {
  return absl::StrFormat("l(1)=%.3fms l(%d)=%.3fms alpha=%.4fms beta=%.4fms", ToMillis(Latency(1)),
                         max_batch(), ToMillis(Latency(max_batch())), fit_.alpha_ns / 1e6,
                         fit_.beta_ns / 1e6);
}

}  // namespace tutti
