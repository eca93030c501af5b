// Prometheus's text exposition format: every metric family's header, and
// PromHistogram, a histogram with fixed bucket bounds, safe to observe from
// many threads.
#ifndef TUTTI_CORE_PROMETHEUS_H_
#define TUTTI_CORE_PROMETHEUS_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tutti {

// A metric family's header: "# HELP <name> <help>\n# TYPE <name> <type>\n"
// (`type`: counter, gauge or histogram); its samples follow.
std::string PromFamily(absl::string_view name, absl::string_view type, absl::string_view help);

class PromHistogram {
 public:
  // `bounds`: increasing bucket upper bounds (a +Inf bucket is implied).
  explicit PromHistogram(std::vector<double> bounds);

  void Observe(double value);
  int64_t count() const { return count_.load(); }
  const std::vector<double>& bounds() const { return bounds_; }
  // Per bucket (not cumulative), the +Inf bucket last.
  std::vector<int64_t> Buckets() const;
  double sum() const { return sum_.load(); }

  // Appends `name`_bucket{labels,le="…"} (cumulative), `name`_sum and
  // `name`_count lines. `labels` is e.g. `model="mlp"`.
  void AppendTo(std::string* out, absl::string_view name, absl::string_view labels) const;

  // Bounds for latencies in seconds (100 µs … 10 s) and for batch sizes.
  static std::vector<double> SecondsBounds();
  static std::vector<double> BatchBounds();
  // Fine bounds for end-to-end latencies in seconds (50 µs … about 30 s,
  // each 1.1× the last): quantiles read from them are within 10%.
  static std::vector<double> LatencyBounds();

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<int64_t>[]> buckets_;  // not cumulative; last is +Inf
  std::atomic<int64_t> count_{0};
  std::atomic<double> sum_{0};
};

}  // namespace tutti

#endif  // TUTTI_CORE_PROMETHEUS_H_
