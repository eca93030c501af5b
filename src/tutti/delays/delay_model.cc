#include "tutti/delays/delay_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tutti/scheduler/batch_policy.h"

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

// The quantiles below the model's that overload may plan at.
constexpr double kLowerQuantiles[] = {0.995, 0.99, 0.98, 0.95};
// Arrival rates are counted over this much of the recent past.
constexpr Duration kRateWindow = kSecond;
// A lower quantile must serve this much more to be chosen.
constexpr double kMinGain = 0.01;

int RateSlots(const DelayModelOptions& o) { return static_cast<int>(std::max<Duration>(1, kRateWindow / o.refresh)); }

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

int64_t DelayHistogram::count() const {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

int64_t DelayHistogram::Over(Duration bound) const {
  int64_t n = 0;
  for (size_t i = Bucket(bound) + 1; i < counts.size(); ++i) n += counts[i];
  return n;
}

size_t DelayHistogram::Bucket(Duration value) {
  return static_cast<size_t>(std::lower_bound(kBounds.begin(), kBounds.end(), value) - kBounds.begin());
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

size_t ChooseMargin(const ClusterSpec& spec, const DelayPlan& fixed, const DelayEstimates& estimates, Duration cap) {
  const std::vector<double>& rates = estimates.arrival_rates;
  const int models = static_cast<int>(spec.models.size());
  const std::vector<SubCluster> subs = spec.EffectiveSubClusters();
  size_t best = 0;
  double best_served = -1;
  DelayEstimates e = estimates;  // with each margin's dispatch and response in turn
  for (size_t i = 0; i < estimates.margins.size(); ++i) {
    const DelayEstimates::Margin& margin = estimates.margins[i];
    e.delays[static_cast<int>(Delay::kDispatch)].value = margin.dispatch;
    e.delays[static_cast<int>(Delay::kResponse)].value = margin.response;
    const DelayPlan plan = PlanDelays(fixed, e, spec.num_gpus(), models, cap);
    double served = 0;
    GpuId first_gpu = 0;
    for (const SubCluster& sub : subs) {
      double arrivals = 0, busy = 0;  // requests/s, GPU-seconds/s
      for (ModelId m : sub.models) {
        const double rate = m < static_cast<ModelId>(rates.size()) ? rates[m] : 0;
        if (rate <= 0) continue;
        const ModelSpec& model = spec.models[m];
        const ComputePlan& compute = plan.Compute(first_gpu, m, models);
        const int b = SustainedBatch(model, sub.num_gpus, model.slo, compute, plan.network, plan.frontrun_slack);
        arrivals += rate;
        busy += rate * static_cast<double>(compute.Occupancy(model.profile, b)) / b / static_cast<double>(kSecond);
      }
      const double share = busy / std::max(1, sub.num_gpus);
      served += share > 1 ? arrivals / share : arrivals;
      first_gpu += sub.num_gpus;
    }
    served *= margin.quantile;
    if (served > best_served * (1 + kMinGain)) {
      best = i;
      best_served = served;
    }
  }
  return best;
}

DelayModel::DelayModel(const ClusterSpec& spec, const DelayModelOptions& options, const DelayPlan& fixed)
    : spec_(spec), options_(options), fixed_(fixed), cap_(Cap(spec, options)), plan_(fixed) {
  for (int d = 0; d < kDelayKinds; ++d) delays_.emplace_back(DurationOptions(options_));
  arrivals_.assign(spec_.models.size(), std::vector<std::pair<int64_t, int64_t>>(RateSlots(options_), {-1, 0}));
}

DelayModel::~DelayModel() { Stop(); }

void DelayModel::Record(Delay delay, Time at, Duration value) {
  AtomicHistogram& h = histograms_[static_cast<int>(delay)];
  h.counts[DelayHistogram::Bucket(value)].fetch_add(1, std::memory_order_relaxed);
  h.sum.fetch_add(value, std::memory_order_relaxed);
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

void DelayModel::RecordArrival(ModelId model, Time at) {
  if (!options_.measure || !options_.overload_margins) return;
  if (model < 0 || model >= static_cast<ModelId>(arrivals_.size())) return;
  const int64_t slot = at / options_.refresh;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int64_t, int64_t>>& ring = arrivals_[model];
  auto& [id, count] = ring[static_cast<size_t>(slot % static_cast<int64_t>(ring.size()))];
  if (id != slot) {
    if (id > slot) return;  // older than the ring holds
    id = slot;
    count = 0;
  }
  ++count;
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
  const WindowedQuantile& dispatch = delays_[static_cast<int>(Delay::kDispatch)];
  const WindowedQuantile& response = delays_[static_cast<int>(Delay::kResponse)];
  e.margins.push_back({options_.quantile, e[Delay::kDispatch].value, e[Delay::kResponse].value});
  if (options_.overload_margins) {
    for (double q : kLowerQuantiles) {
      if (q < options_.quantile) e.margins.push_back({q, at(dispatch, q), at(response, q)});
    }
  }
  // Rates over the whole slots of the last second, before t's slot.
  const int64_t now_slot = t / options_.refresh;
  for (const auto& ring : arrivals_) {
    const int64_t first_slot = now_slot - static_cast<int64_t>(ring.size());
    int64_t n = 0;
    for (const auto& [id, count] : ring) n += id >= first_slot && id < now_slot ? count : 0;
    e.arrival_rates.push_back(static_cast<double>(n) /
                              ToSeconds(static_cast<Duration>(ring.size()) * options_.refresh));
  }
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
    for (size_t i = 0; i < planned.margins.size() && i < h.margins.size(); ++i) {
      larger(planned.margins[i].dispatch, h.margins[i].dispatch);
      larger(planned.margins[i].response, h.margins[i].response);
    }
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
  const size_t chosen = ChooseMargin(spec_, fixed_, planned, cap_);
  planned.delays[static_cast<int>(Delay::kDispatch)].value = planned.margins[chosen].dispatch;
  planned.delays[static_cast<int>(Delay::kResponse)].value = planned.margins[chosen].response;
  estimates_ = held_.back().second;
  estimates_.planned_quantile = planned.margins[chosen].quantile;
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

std::array<DelayHistogram, kDelayKinds> DelayModel::histograms() const {
  std::array<DelayHistogram, kDelayKinds> out;
  for (int d = 0; d < kDelayKinds; ++d) {
    for (size_t i = 0; i < out[d].counts.size(); ++i) {
      out[d].counts[i] = histograms_[d].counts[i].load(std::memory_order_relaxed);
    }
    out[d].sum = histograms_[d].sum.load(std::memory_order_relaxed);
  }
  return out;
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
