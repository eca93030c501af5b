#include "tutti/workload/workload.h"

#include <cmath>
#include <queue>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tutti/core/file_util.h"
#include "tutti/core/status_macros.h"

namespace tutti {

std::vector<double> ModelShares(const WorkloadSpec& spec, int num_models) {
  std::vector<double> shares(num_models);
  double sum = 0;
  for (int m = 0; m < num_models; ++m) {
    shares[m] = spec.weights.empty() ? 1.0 / std::pow(m + 1, spec.zipf_s) : spec.weights[m];
    sum += shares[m];
  }
  for (double& s : shares) s /= sum;
  return shares;
}

double RateAt(const WorkloadSpec& spec, Time t) {
  double rate = spec.rate;
  for (const RatePhase& p : spec.phases) {
    if (p.start <= t) rate = p.rate;
  }
  return rate;
}

namespace {

// One model's renewal process, with the rate scaled piecewise. A gap drawn
// at rate r is measured in "work" units and consumed across phase changes,
// so rate changes take effect at their boundaries.
class ModelStream {
 public:
  ModelStream(const WorkloadSpec& spec, double share, uint64_t seed)
      : spec_(spec), share_(share), rng_(seed) {}

  // The next arrival time after `t`, or kInfiniteFuture.
  Time NextAfter(Time t) {
    double work = DrawUnitGap();  // in units of "mean gaps"
    for (;;) {
      const double rate = RateAt(spec_, t) * share_;
      const Time boundary = NextBoundary(t);
      if (rate > 0) {
        const double gap_ns = work / rate * 1e9;
        if (t + gap_ns < static_cast<double>(boundary)) return t + std::max<Time>(1, std::llround(gap_ns));
        work -= static_cast<double>(boundary - t) * rate / 1e9;
      }
      if (boundary == kInfiniteFuture) return kInfiniteFuture;
      t = boundary;
    }
  }

 private:
  double DrawUnitGap() {
    switch (spec_.arrival) {
      case ArrivalKind::kConstant:
        return 1.0;
      case ArrivalKind::kGamma: {
        std::gamma_distribution<double> g(spec_.gamma_shape, 1.0 / spec_.gamma_shape);
        return g(rng_);
      }
      default: {
        std::exponential_distribution<double> e(1.0);
        return e(rng_);
      }
    }
  }

  Time NextBoundary(Time t) const {
    for (const RatePhase& p : spec_.phases) {
      if (p.start > t) return p.start;
    }
    return kInfiniteFuture;
  }

  const WorkloadSpec& spec_;
  const double share_;
  std::mt19937_64 rng_;
};

class SyntheticSource final : public ArrivalSource {
 public:
  SyntheticSource(WorkloadSpec spec, int num_models, Time end, uint64_t seed)
      : spec_(std::move(spec)), end_(end) {
    const std::vector<double> shares = ModelShares(spec_, num_models);
    for (int m = 0; m < num_models; ++m) {
      streams_.emplace_back(spec_, shares[m], seed * 1000003 + m);
      // Constant streams start at a random phase so models do not align.
      Time first = streams_[m].NextAfter(0);
      if (spec_.arrival == ArrivalKind::kConstant && first != kInfiniteFuture) {
        std::mt19937_64 phase_rng(seed * 7919 + m);
        first = static_cast<Time>(std::uniform_real_distribution<double>(0, 1)(phase_rng) * first);
      }
      if (first < end_) heap_.push({first, m});
    }
  }

  bool Next(Arrival* out) override {
    if (heap_.empty()) return false;
    const auto [t, m] = heap_.top();
    heap_.pop();
    *out = {t, m};
    const Time next = streams_[m].NextAfter(t);
    if (next < end_) heap_.push({next, m});
    return true;
  }

 private:
  using Entry = std::pair<Time, int>;
  WorkloadSpec spec_;
  Time end_;
  std::vector<ModelStream> streams_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

class TraceSource final : public ArrivalSource {
 public:
  explicit TraceSource(std::vector<Arrival> arrivals) : arrivals_(std::move(arrivals)) {}
  bool Next(Arrival* out) override {
    if (next_ >= arrivals_.size()) return false;
    *out = arrivals_[next_++];
    return true;
  }

 private:
  std::vector<Arrival> arrivals_;
  size_t next_ = 0;
};

absl::StatusOr<std::vector<Arrival>> ReadTrace(const std::string& path, int num_models, Time end) {
  TUTTI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::vector<Arrival> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || absl::StartsWith(line, "time_ms")) continue;
    std::vector<absl::string_view> cols = absl::StrSplit(line, ',');
    double ms;
    int model;
    if (cols.size() != 2 || !absl::SimpleAtod(cols[0], &ms) || !absl::SimpleAtoi(cols[1], &model)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected 'time_ms,model_index'"));
    }
    if (model < 0 || model >= num_models || ms < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": model index ", model,
                                                     " or time ", ms, " out of range"));
    }
    if (Millis(ms) < end) out.push_back({Millis(ms), model});
  }
  std::stable_sort(out.begin(), out.end(), [](const Arrival& a, const Arrival& b) { return a.time < b.time; });
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArrivalSource>> MakeArrivalSource(const WorkloadSpec& spec,
                                                                 int num_models, Time end,
                                                                 uint64_t seed) {
  if (num_models < 1) return absl::InvalidArgumentError("workload needs at least one model");
  if (spec.arrival == ArrivalKind::kTrace) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<Arrival> arrivals, ReadTrace(spec.trace_path, num_models, end));
    return std::unique_ptr<ArrivalSource>(std::make_unique<TraceSource>(std::move(arrivals)));
  }
  if (spec.rate < 0) return absl::InvalidArgumentError("workload rate must not be negative");
  for (const RatePhase& p : spec.phases) {
    if (p.rate < 0) return absl::InvalidArgumentError("a workload phase has a negative rate");
  }
  if (spec.arrival == ArrivalKind::kGamma && !(spec.gamma_shape > 0)) {
    return absl::InvalidArgumentError("gamma shape must be positive");
  }
  if (!spec.weights.empty() && static_cast<int>(spec.weights.size()) != num_models) {
    return absl::InvalidArgumentError(absl::StrCat("workload has ", spec.weights.size(),
                                                   " weights for ", num_models, " models"));
  }
  return std::unique_ptr<ArrivalSource>(std::make_unique<SyntheticSource>(spec, num_models, end, seed));
}

WorkloadSpec ScaleWorkload(const WorkloadSpec& spec, double factor) {
  WorkloadSpec out = spec;
  out.rate *= factor;
  for (RatePhase& p : out.phases) p.rate *= factor;
  return out;
}

std::vector<double> InitialModelRates(const WorkloadSpec& spec, int num_models) {
  std::vector<double> rates = ModelShares(spec, num_models);
  for (double& r : rates) r *= spec.rate;
  return rates;
}

std::string PriorityName(int level) { return "priority " + std::to_string(level + 1); }

}  // namespace tutti
