#include "tutti/planner/squishy_bin_packing.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tutti {
namespace {

struct Residual {
  const Session* session;
  double rate;  // the residual part of the session's rate
  int batch;
  Duration duty_cycle;
  double occupancy;
};

// The batch that serves `rate` within one duty cycle `d`.
int BatchForCycle(double rate, Duration d) {
  return std::max(1, static_cast<int>(std::ceil(rate * ToSeconds(d) - 1e-9)));
}

// `node` (holding `members`) with `r` added, if the merged node meets every
// SLO (Nexus Figure 7).
std::optional<GpuNode> Merge(const GpuNode& node, const std::vector<Residual>& members,
                             const Residual& r) {
  GpuNode merged;
  merged.duty_cycle = std::min(node.duty_cycle, r.duty_cycle);
  Duration busy = 0;
  std::vector<Residual> all = members;
  all.push_back(r);
  for (const Residual& m : all) {
    const Session& s = *m.session;
    const int b = BatchForCycle(m.rate, merged.duty_cycle);
    if (b > s.profile->max_batch()) return std::nullopt;
    const Duration l = s.profile->Latency(b);
    if (merged.duty_cycle + l > s.slo) return std::nullopt;
    busy += l;
    merged.sessions.push_back({s.model, b, m.rate});
  }
  if (busy > merged.duty_cycle) return std::nullopt;
  merged.occupancy = static_cast<double>(busy) / static_cast<double>(merged.duty_cycle);
  return merged;
}

// The residual node for `rate` of session `s` alone: the largest batch with
// ℓ(b) + b/rate <= SLO and its duty cycle b/rate (at least one request per
// SLO when the rate is that low).
Residual MakeResidual(const Session& s, double rate) {
  const LatencyProfile& p = *s.profile;
  int b = p.MaxBatchForRate(s.slo, rate);
  Duration d;
  if (b == 0) {
    b = 1;
    d = s.slo - p.Latency(1);
  } else {
    d = static_cast<Duration>(std::floor(b / rate * 1e9));  // rounded so b/d >= rate
  }
  return {&s, rate, b, d, static_cast<double>(p.Latency(b)) / static_cast<double>(d)};
}

}  // namespace

std::vector<GpuNode> SquishyBinPack(const std::vector<Session>& sessions) {
  std::vector<GpuNode> nodes;
  std::vector<Residual> residuals;
  for (const Session& s : sessions) {
    const LatencyProfile& p = *s.profile;
    double rest = s.rate;
    // B = max b with 2ℓ(b) <= SLO. When even 2ℓ(1) > SLO no duty cycle can
    // bound the latency; such a session still gets whole GPUs at batch 1
    // (best effort: only requests that wait behind a batch miss).
    const int big = p.Latency(1) <= s.slo ? std::max(1, p.MaxBatchWithin(s.slo / 2)) : 0;
    if (big > 0) {  // ScheduleSaturate
      const double per_gpu = p.Throughput(big);
      const int n = static_cast<int>(std::floor(s.rate / per_gpu));
      for (int i = 0; i < n; ++i) {
        nodes.push_back({p.Latency(big), {{s.model, big, per_gpu}}, 1.0, true});
      }
      rest -= n * per_gpu;
    }
    if (rest <= 1e-9 || p.Latency(1) > s.slo) continue;
    const Residual r = MakeResidual(s, rest);
    if (r.occupancy > 1) {
      // Too much for one GPU at any batch the SLO allows: one more whole GPU.
      nodes.push_back({p.Latency(big), {{s.model, big, rest}}, 1.0, true});
      continue;
    }
    residuals.push_back(r);
  }
  // ScheduleResidue: decreasing occupancy, best-fit merge.
  std::stable_sort(residuals.begin(), residuals.end(),
                   [](const Residual& a, const Residual& b) { return a.occupancy > b.occupancy; });
  const size_t first_residual = nodes.size();
  std::vector<std::vector<Residual>> members;  // per residual node
  for (const Residual& r : residuals) {
    std::optional<GpuNode> best;
    size_t best_index = 0;
    for (size_t i = first_residual; i < nodes.size(); ++i) {
      std::optional<GpuNode> merged = Merge(nodes[i], members[i - first_residual], r);
      if (merged && (!best || merged->occupancy > best->occupancy)) {
        best = std::move(merged);
        best_index = i;
      }
    }
    if (best) {
      nodes[best_index] = *std::move(best);
      members[best_index - first_residual].push_back(r);
    } else {
      nodes.push_back({r.duty_cycle, {{r.session->model, r.batch, r.rate}}, r.occupancy, false});
      members.push_back({r});
    }
  }
  return nodes;
}

}  // namespace tutti
