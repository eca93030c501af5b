#include "tutti/core/prometheus.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tutti {

std::string PromFamily(absl::string_view name, absl::string_view type, absl::string_view help) {
  return absl::StrCat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

PromHistogram::PromHistogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<int64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void PromHistogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++buckets_[i];
  ++count_;
  sum_.fetch_add(value);
}

void PromHistogram::AppendTo(std::string* out, absl::string_view name, absl::string_view labels) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i];
    const std::string le = i < bounds_.size() ? absl::StrFormat("%g", bounds_[i]) : "+Inf";
    absl::StrAppendFormat(out, "%s_bucket{%s,le=\"%s\"} %d\n", name, labels, le, cumulative);
  }
  absl::StrAppendFormat(out, "%s_sum{%s} %.9g\n%s_count{%s} %d\n", name, labels, sum_.load(), name, labels,
                        count_.load());
}

std::vector<double> PromHistogram::SecondsBounds() {
  return {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<int64_t> PromHistogram::Buckets() const {
  std::vector<int64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> PromHistogram::LatencyBounds() {
  std::vector<double> out;
  for (double b = 5e-5; b < 30; b *= 1.1) out.push_back(b);
  return out;
}

std::vector<double> PromHistogram::BatchBounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}; }

}  // namespace tutti
