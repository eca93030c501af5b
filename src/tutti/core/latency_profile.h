// LatencyProfile: the batch latency function ℓ(b) of one model on one kind of
// executor, for b = 1 … max_batch.
//
// A profile is built from measured points (batch size, latency) that must
// include b = 1; ℓ at unmeasured sizes between two points is interpolated
// linearly, and max_batch is the largest measured size. It also carries the
// least-squares linear fit ℓ(b) ≈ α·b + β that the papers use (Symphony §3,
// Nexus §4). ℓ must be non-decreasing in b: a table that is not is either
// rejected with an error naming the offending sizes, or enforced by raising
// each point to the running maximum (for noisy measurements).
//
// Inverse queries are O(log max_batch) binary searches over a dense table.
// Immutable after construction; safe to share across threads.
#ifndef TUTTI_CORE_LATENCY_PROFILE_H_
#define TUTTI_CORE_LATENCY_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"

namespace tutti {

struct ProfilePoint {
  int batch = 0;
  Duration latency = 0;
  bool operator==(const ProfilePoint&) const = default;
};

// ℓ(b) ≈ alpha_ns·b + beta_ns.
struct LinearFit {
  double alpha_ns = 0;
  double beta_ns = 0;
};

enum class Monotonicity {
  kReject,   // a decreasing step is an InvalidArgument error
  kEnforce,  // a decreasing step is raised to the previous latency
};

class LatencyProfile {
 public:
  // An empty profile (max_batch() == 0), only to be assigned over.
  LatencyProfile() = default;

  // Builds from measured points, in any order. Errors (InvalidArgument): no
  // points, a batch size < 1, a latency <= 0, a repeated batch size, no point
  // at b = 1, or (with kReject) ℓ decreasing between two measured sizes.
  static absl::StatusOr<LatencyProfile> FromPoints(std::vector<ProfilePoint> points,
                                                   Monotonicity monotonicity);

  // The exact linear profile ℓ(b) = alpha·b + beta for b = 1 … max_batch, as
  // published in the papers' tables. Errors: alpha < 0, beta < 0, alpha + beta
  // <= 0, max_batch < 1.
  static absl::StatusOr<LatencyProfile> Linear(Duration alpha, Duration beta, int max_batch);

  int max_batch() const { return static_cast<int>(dense_.size()); }

  // ℓ(b). REQUIRES: 1 <= b <= max_batch().
  Duration Latency(int b) const { return dense_[b - 1]; }

  // Requests per second served by back-to-back batches of size b: b / ℓ(b).
  // REQUIRES: 1 <= b <= max_batch().
  double Throughput(int b) const;

  // The largest b with ℓ(b) <= budget, or 0 if even ℓ(1) exceeds it.
  int MaxBatchWithin(Duration budget) const;

  // The largest b with ℓ(b) + b/rate <= slo (a batch of b requests arriving at
  // `rate` per second is gathered and executed within the SLO; Nexus's
  // residual-load rule), or 0 if none. REQUIRES: rate_per_s > 0.
  int MaxBatchForRate(Duration slo, double rate_per_s) const;

  const std::vector<ProfilePoint>& points() const { return points_; }
  const LinearFit& fit() const { return fit_; }

  // One line: "l(1)=…ms l(max)=…ms alpha=…ms beta=…ms max_batch=…".
  std::string DebugString() const;

 private:
  LatencyProfile(std::vector<ProfilePoint> points, std::vector<Duration> dense);

  std::vector<ProfilePoint> points_;  // measured, sorted by batch, monotone
  std::vector<Duration> dense_;       // dense_[b - 1] = ℓ(b)
  LinearFit fit_;
};

// The largest b in [1, cap] with fits(b), for a monotone predicate (true up
// to some b, false after), or 0 if fits(1) is false. O(log cap) calls.
template <typename Fits>
int LargestFitting(int cap, Fits fits) {
  int lo = 0, hi = cap;  // fits(lo) (or lo == 0); !fits(b) for every b > hi
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Least-squares fit of latency against batch size. With a single point the
// slope is 0 and the intercept is that latency.
LinearFit FitLinear(const std::vector<ProfilePoint>& points);

}  // namespace tutti

#endif  // TUTTI_CORE_LATENCY_PROFILE_H_
