#include "tutti/profiler/profiler.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

std::vector<int> ProfileBatchSizes(int max_batch) {
  std::vector<int> sizes;
  for (int b = 1; b <= std::min(32, max_batch); ++b) sizes.push_back(b);
  for (int b = 64; b < max_batch; b *= 2) sizes.push_back(b);
  if (max_batch > 32) sizes.push_back(max_batch);
  return sizes;
}

absl::StatusOr<LatencyProfile> MeasureLatencyProfile(const RunBatchFn& run, const Clock& clock,
                                                     const ProfilerOptions& options,
                                                     const ProfileProgressFn& progress) {
  if (options.max_batch < 1 || options.warmup_runs < 0 || options.repeats < 1 ||
      options.max_repeats < options.repeats) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profiler options: max_batch ", options.max_batch, ", warmup_runs ", options.warmup_runs,
        ", repeats ", options.repeats, ", max_repeats ", options.max_repeats,
        " (need max_batch >= 1, warmup_runs >= 0, 1 <= repeats <= max_repeats)"));
  }
  std::vector<ProfilePoint> points;
  std::vector<Duration> samples;
  for (int b : ProfileBatchSizes(options.max_batch)) {
    for (int i = 0; i < options.warmup_runs; ++i) TUTTI_RETURN_IF_ERROR(run(b));
    samples.clear();
    Duration timed = 0;
    while (static_cast<int>(samples.size()) < options.max_repeats &&
           (static_cast<int>(samples.size()) < options.repeats || timed < options.min_time_per_batch)) {
      const Time start = clock.Now();
      TUTTI_RETURN_IF_ERROR(run(b));
      samples.push_back(std::max<Duration>(1, clock.Now() - start));
      timed += samples.back();
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    points.push_back({b, samples[samples.size() / 2]});
    if (progress) progress(b, points.back().latency);
  }
  return LatencyProfile::FromPoints(std::move(points), Monotonicity::kEnforce);
}

}  // namespace tutti
