// What a simulation (or a load test) measured, per model and in total.
#ifndef TUTTI_WORKLOAD_METRICS_H_
#define TUTTI_WORKLOAD_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tutti/core/histogram.h"
#include "tutti/core/outcome_counts.h"
#include "tutti/core/time.h"

namespace tutti {

// How the requests that arrived ended (OutcomeCounts: good and late are
// completed within and after the deadline; dropped, by the scheduler; an
// error, a failed or refused request, or one never answered).
struct ModelMetrics : OutcomeCounts {
  std::string name;
  Duration slo = 0;
  int64_t arrived = 0;
  int64_t batches = 0;
  Histogram latency;    // arrival → response, completed requests
  Histogram queueing;   // arrival → batch start
  std::vector<int64_t> batch_size_counts;  // [b] = batches of size b

  void RecordBatch(int size);
  void Merge(const ModelMetrics& other);
  double MeanBatch() const;
  // Latency quantile counting dropped and failed requests as infinitely late
  // (kInfiniteFuture when the quantile falls among the drops).
  Duration QuantileWithDrops(double q) const;
};

// "12.34" for milliseconds, "inf" for kInfiniteFuture.
std::string FormatMillis(Duration d);

}  // namespace tutti

#endif  // TUTTI_WORKLOAD_METRICS_H_
