#include "tutti/delays/delay_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tutti {
namespace {

// Compute ratios are kept as fixed-point integers: 1.0 is kRatioOne.
constexpr int64_t kRatioOne = int64_t{1} << 16;
// A median ratio this close to 1 is planned as 1: profiles are measured
// with noise too, and chasing it would only move plans around.
constexpr double kScaleDeadBand = 0.05;

WindowedQuantile::Options DurationOptions(const DelayModelOptions& o) {
  WindowedQuantile::Options w;
  w.window = o.window;
  w.slot = o.refresh;
  return w;
}

WindowedQuantile::Options RatioOptions(const DelayModelOptions& o) {
  WindowedQuantile::Options w = DurationOptions(o);
  w.sub_bits = 5;                     // within 3%
  w.max_value = kRatioOne << 8;       // up to 256 times the profile
  return w;
}

Duration Cap(const ClusterSpec& spec, const DelayModelOptions& o) {
  Duration slo = kInfiniteFuture;
  for (const ModelSpec& m : spec.models) slo = std::min(slo, m.slo);
  return slo == kInfiniteFuture ? slo : static_cast<Duration>(o.max_share * static_cast<double>(slo));
}

}  // namespace

absl::string_view DelayName(Delay delay) {
  switch (delay) {
    case Delay::kDispatch:
      return "dispatch";
    case Delay::kResponse:
      return "response";
    case Delay::kTimer:
      return "timer";
  }
  return "?";
}

DelayPlan PlanDelays(const DelayPlan& fixed, const DelayEstimates& estimates, int gpus, int models, Duration cap) {
  DelayPlan plan = fixed;
  // Raises `*part` to the estimate of `d`, up to `limit`.
  auto raise = [&](Delay d, Duration* part, Duration limit) {
    if (const std::optional<Duration>& v = estimates[d].value) *part = std::max(*part, std::min(*v, limit));
  };
  raise(Delay::kDispatch, &plan.network.ctrl, cap);
  raise(Delay::kResponse, &plan.network.resp, cap - plan.network.ctrl);
  raise(Delay::kTimer, &plan.frontrun_slack, cap);
  if (estimates.timer_tail) plan.head_guard = std::max(plan.head_guard, std::min(*estimates.timer_tail, cap));
  if (!estimates.compute.empty()) {
    plan.compute.assign(static_cast<size_t>(gpus) * models, ComputePlan{});
    for (const DelayEstimates::Compute& c : estimates.compute) {
      plan.compute[static_cast<size_t>(c.gpu) * models + c.model] = {c.scale, c.tail_scale, c.late_start};
    }
  }
  return plan;
}

DelayModel::DelayModel(const ClusterSpec& spec, const DelayModelOptions& options, const DelayPlan& fixed)
    : spec_(spec), options_(options), fixed_(fixed), cap_(Cap(spec, options)), plan_(fixed) {
  for (int d = 0; d < kDelayKinds; ++d) delays_.emplace_back(DurationOptions(options_));
}

DelayModel::~DelayModel() { Stop(); }

void DelayModel::Record(Delay delay, Time at, Duration value) {
  if (!options_.measure) return;
  std::lock_guard<std::mutex> lock(mu_);
  delays_[static_cast<int>(delay)].Record(at, value);
}

DelayModel::ComputeStats& DelayModel::StatsFor(GpuId gpu, ModelId model) {
  std::unique_ptr<ComputeStats>& s = compute_[static_cast<int64_t>(gpu) * spec_.models.size() + model];
  if (s == nullptr) {
    s = std::make_unique<ComputeStats>(
        ComputeStats{WindowedQuantile(RatioOptions(options_)), WindowedQuantile(DurationOptions(options_))});
  }
  return *s;
}

void DelayModel::RecordBatch(GpuId gpu, ModelId model, int size, Time ready, Time started, Time finished) {
  if (!options_.measure || model < 0 || model >= static_cast<ModelId>(spec_.models.size())) return;
  const LatencyProfile& profile = spec_.models[model].profile;
  if (size < 1 || size > profile.max_batch()) return;
  const Duration l = profile.Latency(size);
  const int64_t ratio = std::llround(static_cast<double>(finished - started) / static_cast<double>(l) *
                                     static_cast<double>(kRatioOne));
  std::lock_guard<std::mutex> lock(mu_);
  ComputeStats& stats = StatsFor(gpu, model);
  stats.ratio.Record(finished, ratio);
  stats.late_start.Record(finished, started - ready);
}

DelayPlan DelayModel::Refresh(Time t) {
  std::lock_guard<std::mutex> lock(mu_);
  DelayEstimates e;
  // The quantile of the window's recent n samples (at least min_samples),
  // without their `outliers` largest.
  auto at = [this](const WindowedQuantile& w, double q) {
    const double n = static_cast<double>(w.RecentCount(options_.min_samples));
    return w.RecentQuantile(std::min(q, 1 - options_.outliers / std::max(n, 1.0)), options_.min_samples);
  };
  for (Delay d : kAllDelays) {
    WindowedQuantile& w = delays_[static_cast<int>(d)];
    w.Advance(t);
    e.delays[static_cast<int>(d)] = {at(w, d == Delay::kTimer ? options_.timer_quantile : options_.quantile),
                                     w.RecentCount(options_.min_samples)};
  }
  e.timer_tail = at(delays_[static_cast<int>(Delay::kTimer)], options_.quantile);
  const int models = static_cast<int>(spec_.models.size());
  for (auto& [key, stats] : compute_) {
    stats->ratio.Advance(t);
    stats->late_start.Advance(t);
    if (stats->ratio.count() == 0) continue;
    DelayEstimates::Compute c;
    c.gpu = static_cast<GpuId>(key / models);
    c.model = static_cast<ModelId>(key % models);
    c.batches = stats->ratio.count();
    c.ratio = static_cast<double>(*stats->ratio.Quantile(0.5)) / static_cast<double>(kRatioOne);
    c.scale = std::abs(c.ratio - 1) <= kScaleDeadBand ? 1 : c.ratio;
    c.tail_scale = std::max(c.scale, static_cast<double>(*at(stats->ratio, options_.quantile)) / kRatioOne);
    if (std::abs(c.tail_scale - 1) <= kScaleDeadBand) c.tail_scale = 1;
    c.late_start = std::max<Duration>(0, at(stats->late_start, options_.quantile).value_or(0));
    e.compute.push_back(c);
  }
  std::sort(e.compute.begin(), e.compute.end(), [](const auto& a, const auto& b) {
    return std::pair(a.gpu, a.model) < std::pair(b.gpu, b.model);
  });
  // The plan's delays: each one's largest estimate over the last `hold`.
  DelayEstimates planned = e;
  held_.emplace_back(t, std::move(e));
  while (held_.size() > 1 && held_.front().first <= t - options_.hold) held_.pop_front();  // hold 0: the last
  auto larger = [](std::optional<Duration>& a, const std::optional<Duration>& b) {
    if (b && (!a || *b > *a)) a = b;
  };
  absl::flat_hash_map<int64_t, DelayEstimates::Compute> compute;  // by gpu·models + model
  for (const auto& [at, h] : held_) {
    for (int d = 0; d < kDelayKinds; ++d) larger(planned.delays[d].value, h.delays[d].value);
    larger(planned.timer_tail, h.timer_tail);
    for (const DelayEstimates::Compute& c : h.compute) {
      auto [it, added] = compute.emplace(static_cast<int64_t>(c.gpu) * models + c.model, c);
      it->second.scale = std::max(it->second.scale, c.scale);
      it->second.tail_scale = std::max(it->second.tail_scale, c.tail_scale);
      it->second.late_start = std::max(it->second.late_start, c.late_start);
    }
  }
  planned.compute.clear();
  for (const auto& [key, c] : compute) planned.compute.push_back(c);
  estimates_ = held_.back().second;
  plan_ = PlanDelays(fixed_, planned, spec_.num_gpus(), models, cap_);
  return plan_;
}

DelayPlan DelayModel::plan() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_;
}

DelayEstimates DelayModel::estimates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return estimates_;
}

void DelayModel::Start(Clock* clock, std::function<void(const DelayPlan&)> apply) {
  if (!options_.measure) return;
  std::lock_guard<std::mutex> lock(mu_);
  clock_ = clock;
  apply_ = std::move(apply);
  const Time now = clock_->Now();
  timer_ = clock_->ScheduleAt((now / options_.refresh + 1) * options_.refresh, [this] { Tick(); });
}

void DelayModel::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (clock_ != nullptr) clock_->Cancel(timer_);
  clock_ = nullptr;
  timer_ = kNoTimer;
}

void DelayModel::Tick() {
  Time now;
  std::function<void(const DelayPlan&)> apply;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (clock_ == nullptr) return;
    now = clock_->Now();
    timer_ = clock_->ScheduleAt((now / options_.refresh + 1) * options_.refresh, [this] { Tick(); });
    apply = apply_;
  }
  const DelayPlan before = plan();
  const DelayPlan after = Refresh(now / options_.refresh * options_.refresh);
  if (!(after == before)) apply(after);
}

}  // namespace tutti
