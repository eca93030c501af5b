#include "tutti/workload/metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace tutti {

void ModelMetrics::RecordBatch(int size) {
  ++batches;
  if (static_cast<int>(batch_size_counts.size()) <= size) batch_size_counts.resize(size + 1);
  ++batch_size_counts[size];
}

void ModelMetrics::Merge(const ModelMetrics& o) {
  arrived += o.arrived;
  OutcomeCounts::operator+=(o);
  batches += o.batches;
  latency.Merge(o.latency);
  queueing.Merge(o.queueing);
  if (batch_size_counts.size() < o.batch_size_counts.size()) {
    batch_size_counts.resize(o.batch_size_counts.size());
  }
  for (size_t b = 0; b < o.batch_size_counts.size(); ++b) batch_size_counts[b] += o.batch_size_counts[b];
}

double ModelMetrics::MeanBatch() const {
  int64_t requests = 0;
  for (size_t b = 0; b < batch_size_counts.size(); ++b) requests += b * batch_size_counts[b];
  return batches ? static_cast<double>(requests) / static_cast<double>(batches) : 0;
}

Duration ModelMetrics::QuantileWithDrops(double q) const {
  const int64_t completed = latency.count();
  const int64_t total = completed + dropped + error;
  if (total == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * total)));
  if (rank > completed) return kInfiniteFuture;
  return latency.Quantile(static_cast<double>(rank) / static_cast<double>(completed));
}

std::string FormatMillis(Duration d) {
  return d == kInfiniteFuture ? "inf" : absl::StrFormat("%.2f", ToMillis(d));
}

}  // namespace tutti
