#include "tutti/autoscale/autoscaler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

int MaxGpus(const AutoscaleOptions& o, int total) { return o.max_gpus == 0 ? total : o.max_gpus; }
int InitialGpus(const AutoscaleOptions& o) { return o.initial_gpus == 0 ? o.min_gpus : o.initial_gpus; }

}  // namespace

absl::Status Autoscaler::Validate(const AutoscaleOptions& o, int total) {
  const int max = MaxGpus(o, total), initial = InitialGpus(o);
  if (o.interval <= 0 || o.provision_delay < 0 || o.min_gpus < 1 || max < o.min_gpus || max > total ||
      initial < o.min_gpus || initial > max || !(o.headroom >= 0 && o.headroom < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("autoscale: needs interval > 0, provision delay ≥ 0, 1 ≤ min_gpus (", o.min_gpus,
                     ") ≤ initial_gpus (", initial, ") ≤ max_gpus (", max, ") ≤ the cluster's ", total,
                     " GPUs, headroom in [0, 1)"));
  }
  return absl::OkStatus();
}

Autoscaler::Autoscaler(AutoscaleOptions options, int total_gpus, Clock* clock, ReadFn read, SetUpFn set_up, Time end)
    : o_(std::move(options)),
      total_(total_gpus),
      clock_(clock),
      read_(std::move(read)),
      set_up_(std::move(set_up)),
      end_(end) {
  o_.max_gpus = MaxGpus(o_, total_);
  up_ = requested_ = InitialGpus(o_);
}

Autoscaler::~Autoscaler() { Stop(); }

void Autoscaler::Start() {
  for (int g = up_; g < total_; ++g) set_up_(g, false);
  std::lock_guard<std::mutex> lock(mu_);
  allocation_.emplace_back(clock_->Now(), up_);
  tick_ = clock_->ScheduleAfter(o_.interval, [this] { Tick(); });
}

void Autoscaler::Stop() {
  std::vector<TimerId> timers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    timers.swap(arrivals_);
    timers.push_back(tick_);
  }
  for (TimerId t : timers) clock_->Cancel(t);
}

void Autoscaler::Tick() {
  const Window w = read_();
  const Time now = clock_->Now();
  int down_from = 0, down_to = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    const double bad_rate = w.outcomes.rate();
    const double idle =
        1 - std::min(1.0, static_cast<double>(w.busy) / (static_cast<double>(o_.interval) * std::max(1, up_)));
    // GPUs that came during the interval make it half one size, half
    // another (and what queued before them is dropped after): it waits.
    const double rate = static_cast<double>(w.outcomes.ended()) / ToSeconds(o_.interval);
    const int change = arrived_ ? 0 : AutoscaleStep(o_, up_, requested_ - up_, bad_rate, idle, rate, &memory_);
    arrived_ = false;
    if (change > 0) {
      ++scale_ups_;
      const int from = requested_;
      requested_ += change;
      arrivals_.push_back(
          clock_->ScheduleAt(now + o_.provision_delay, [this, from, change] { Arrive(from, from + change); }));
    } else if (change < 0) {
      ++scale_downs_;
      down_from = up_ + change;
      down_to = up_;
      up_ += change;
      requested_ = up_;
      allocation_.emplace_back(now, up_);
    }
    tick_ = now + o_.interval < end_ ? clock_->ScheduleAt(now + o_.interval, [this] { Tick(); }) : kNoTimer;
  }
  for (int g = down_from; g < down_to; ++g) set_up_(g, false);
}

void Autoscaler::Arrive(int from, int to) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
  }
  for (int g = from; g < to; ++g) set_up_(g, true);
  std::lock_guard<std::mutex> lock(mu_);
  up_ = std::max(up_, to);
  arrived_ = true;
  allocation_.emplace_back(clock_->Now(), up_);
}

int Autoscaler::up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return up_;
}
int Autoscaler::requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requested_;
}
int Autoscaler::scale_ups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scale_ups_;
}
int Autoscaler::scale_downs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scale_downs_;
}
std::vector<std::pair<Time, int>> Autoscaler::allocation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocation_;
}

double Autoscaler::GpuSeconds(Time lo, Time hi) const {
  std::lock_guard<std::mutex> lock(mu_);
  double gpu_ns = 0;
  for (size_t i = 0; i < allocation_.size(); ++i) {
    const Time from = std::max(lo, allocation_[i].first);
    const Time to = std::min(hi, i + 1 < allocation_.size() ? allocation_[i + 1].first : hi);
    if (to > from) gpu_ns += static_cast<double>(to - from) * allocation_[i].second;
  }
  return gpu_ns / static_cast<double>(kSecond);
}

}  // namespace tutti
