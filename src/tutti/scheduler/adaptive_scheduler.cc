#include "tutti/scheduler/adaptive_scheduler.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <tuple>
#include <utility>

#include "tutti/core/manual_clock.h"
#include "tutti/core/thread_name.h"

namespace tutti {

const std::vector<AdaptiveChoice>& AdaptiveChoices() {
  using Hold = RankPolicy::Hold;
  static const std::vector<AdaptiveChoice>* choices = new std::vector<AdaptiveChoice>{
      {"prompt", {BatchPolicyKind::kDeferred, /*scarce_take=*/false, /*drop_strong=*/true, /*drop_weak=*/true,
                  Hold::kWhileItPays}},
      {"scarce", {BatchPolicyKind::kDeferred, true, true, false, Hold::kWhileBatchMatesCome}},
      {"eager+early", {BatchPolicyKind::kEager, false, true, false}},
      {"eager", {BatchPolicyKind::kEager, false, false, false}},
  };
  return *choices;
}

const AdaptiveChoice* FindAdaptiveChoice(std::string_view name) {
  for (const AdaptiveChoice& c : AdaptiveChoices()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

// Counts each request's outcome on exact GPUs; reports batches done when
// they end, for await_completion.
class ReplayListener final : public SchedulerListener {
 public:
  ReplayListener(ReplayCount* count, Duration resp, ManualClock* clock) : count_(count), resp_(resp), clock_(clock) {}
  void set_scheduler(Scheduler* scheduler) { scheduler_ = scheduler; }

  void OnDispatch(Batch batch) override {
    const Time end = batch.exec_at + batch.latency;
    count_->busy += batch.latency;
    for (const Request& r : batch.requests) {
      ++(end + resp_ <= r.deadline ? count_->good : count_->bad)[r.model];
      count_->latency += end + resp_ - r.arrival;
    }
    clock_->ScheduleAt(end, [this, gpu = batch.gpu] { scheduler_->OnBatchDone(gpu); });
  }
  void OnDrop(const Request& r, DropReason) override { ++count_->bad[r.model]; }

 private:
  ReplayCount* const count_;
  const Duration resp_;
  ManualClock* const clock_;
  Scheduler* scheduler_ = nullptr;
};

}  // namespace

void AdaptiveScheduler::LiveCount::OnDispatch(Batch batch) {
  const Duration resp = plan_ != nullptr ? plan_->network.resp : 0;
  for (const Request& r : batch.requests) bad_[r.model] += batch.exec_at + batch.latency + resp > r.deadline;
  owner_->OnDispatch(std::move(batch));
}

void AdaptiveScheduler::LiveCount::OnDrop(const Request& request, DropReason reason) {
  if (reason != DropReason::kWithdrawn) ++bad_[request.model];
  owner_->OnDrop(request, reason);
}

ReplayCount Replay(const ClusterSpec& spec, const SchedulerOptions& options, const DelayPlan& plan,
                   const std::vector<GpuId>& down, const RankPolicy& policy, const std::vector<Request>& arrivals,
                   const std::vector<bool>& closed) {
  ReplayCount count{std::vector<int64_t>(spec.models.size()), std::vector<int64_t>(spec.models.size())};
  ManualClock clock(arrivals.empty() ? 0 : arrivals.front().arrival);
  ReplayListener listener(&count, plan.network.resp, &clock);
  CandidateScheduler scheduler(spec, options, &clock, &listener, policy);
  scheduler.AssumeClosedLoops(closed);
  listener.set_scheduler(&scheduler);
  scheduler.SetDelayPlan(plan);
  for (GpuId g : down) scheduler.SetGpuUp(g, false, 0).IgnoreError();  // CandidateScheduler: always OK
  for (const Request& r : arrivals) {
    clock.AdvanceTo(std::max(clock.Now(), r.arrival));
    scheduler.Submit(r);
  }
  while (clock.RunNextTimer()) {
  }
  return count;
}

ReplayScore Score(const ReplayCount& count) {
  ReplayScore score;
  for (size_t m = 0; m < count.bad.size(); ++m) {
    score.excess += std::max(0.0, count.bad[m] - 0.01 * static_cast<double>(count.good[m] + count.bad[m]));
    score.bad += count.bad[m];
  }
  score.busy = count.busy;
  score.latency = count.latency;
  return score;
}

std::vector<Request> Compress(const std::vector<Request>& arrivals, double factor) {
  std::vector<Request> out = arrivals;
  for (Request& r : out) {
    const Time at = arrivals.front().arrival + static_cast<Duration>((r.arrival - arrivals.front().arrival) / factor);
    r.deadline = at + (r.deadline - r.arrival);
    r.arrival = at;
  }
  return out;
}

bool Stuck(int64_t live_bad, int64_t live_arrivals, int64_t replayed_bad, int64_t window) {
  if (live_arrivals < 100 || window <= 0) return false;
  const double live = static_cast<double>(live_bad) / static_cast<double>(live_arrivals);
  return live > static_cast<double>(replayed_bad) / static_cast<double>(window) + 0.05;
}

int BestChoice(const std::vector<ReplayScore>& scores, Deferral deferral) {
  // Consolidating, GPU time is weighed as soon as every model meets its
  // objective at p99 (the bad within the 1% allowance, as the autoscaler
  // reads it), before the headroom of the stressed replays: the autoscaler,
  // not idle GPUs, answers a burst. GPU time within 2% of the least counts
  // as the least: so small a saving is not worth slower answers.
  Duration least = kInfiniteFuture;
  for (const ReplayScore& s : scores) least = std::min(least, s.busy);
  auto key = [deferral, least](const ReplayScore& s) {
    const bool frugal = static_cast<double>(s.busy) <= 1.02 * static_cast<double>(least);
    const Duration busy = deferral == Deferral::kConsolidate && !frugal ? s.busy : 0;
    return std::make_tuple(s.excess, busy, s.stressed_excess, s.bad, s.stressed_bad, s.latency);
  };
  int best = 0;
  for (int i = 1; i < static_cast<int>(scores.size()); ++i) {
    if (key(scores[i]) < key(scores[best])) best = i;
  }
  return best;
}

AdaptiveScheduler::AdaptiveScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                                     SchedulerListener* listener)
    : spec_(std::make_shared<const ClusterSpec>(spec)),
      options_(options),
      clock_(clock),
      live_(listener, spec.models.size()),
      inner_(spec, options, clock, &live_, AdaptiveChoices()[0].policy),
      ranks_(inner_.num_ranks()) {
  live_.set_plan(&inner_.plan());
  for (RankLog& r : ranks_) r.next_choice = clock_->Now() + options_.adaptive_epoch;
}

AdaptiveScheduler::~AdaptiveScheduler() = default;  // a pending future waits for its replays

void AdaptiveScheduler::Submit(const Request& request) {
  const int r = inner_.rank_of(request.model);
  RankLog& log = ranks_[r];
  const Time now = clock_->Now();
  if (log.pending.valid() && log.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Apply(r, log.pending.get());
  }
  log.arrivals.push_back(request);
  ++log.live_arrivals;
  // (A request can arrive stamped long ago: re-submitted after a failover.)
  while (!log.arrivals.empty() && log.arrivals.front().arrival < now - options_.adaptive_window) {
    log.arrivals.pop_front();
  }
  if (now >= log.next_choice && !log.pending.valid()) {
    log.next_choice = now + options_.adaptive_epoch;
    Choose(r);
  }
  inner_.Submit(request);
}

void AdaptiveScheduler::AwaitReplays() {
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
    if (ranks_[r].pending.valid()) Apply(r, ranks_[r].pending.get());
  }
}

void AdaptiveScheduler::Choose(int r) {
  // What the current way did live since the last choice, beside what its
  // replay will say of the window.
  RankLog& log = ranks_[r];
  int64_t bad = 0;
  for (ModelId m = 0; m < static_cast<ModelId>(spec_->models.size()); ++m) {
    if (inner_.rank_of(m) == r) bad += live_.bad(m);
  }
  log.live_bad = bad - log.live_bad_before;
  log.live_window = log.live_arrivals;
  log.live_bad_before = bad;
  log.live_arrivals = 0;
  log.window_size = static_cast<int64_t>(log.arrivals.size());
  auto replays = [spec = spec_, options = options_, plan = inner_.plan(), down = inner_.DownGpus(),
                  closed = inner_.ClosedLoops(),
                  arrivals = std::vector<Request>(ranks_[r].arrivals.begin(), ranks_[r].arrivals.end())] {
    std::vector<ReplayScore> scores;
    const std::vector<Request> stressed =
        arrivals.empty() || options.adaptive_stress <= 1 ? std::vector<Request>() : Compress(arrivals, options.adaptive_stress);
    for (const AdaptiveChoice& c : AdaptiveChoices()) {
      ReplayScore score = Score(Replay(*spec, options, plan, down, c.policy, arrivals, closed));
      if (!stressed.empty()) {
        const ReplayScore s = Score(Replay(*spec, options, plan, down, c.policy, stressed, closed));
        score.stressed_excess = s.excess;
        score.stressed_bad = s.bad;
      }
      scores.push_back(score);
    }
    return scores;
  };
  if (options_.adaptive_replay_thread) {
    ranks_[r].pending = std::async(std::launch::async, [replays = std::move(replays)] {
      YieldCpuToOthers();  // a choice made late costs less than a request served late
      return replays();
    });
  } else {
    Apply(r, replays());
  }
}

void AdaptiveScheduler::Apply(int r, std::vector<ReplayScore> scores) {
  RankLog& log = ranks_[r];
  log.scores.push_back(std::move(scores));
  if (static_cast<int>(log.scores.size()) > options_.adaptive_memory) log.scores.pop_front();
  std::vector<ReplayScore> sum(AdaptiveChoices().size());
  for (const std::vector<ReplayScore>& epoch : log.scores) {
    for (size_t c = 0; c < sum.size(); ++c) {
      sum[c].excess += epoch[c].excess;
      sum[c].bad += epoch[c].bad;
      sum[c].stressed_excess += epoch[c].stressed_excess;
      sum[c].stressed_bad += epoch[c].stressed_bad;
      sum[c].busy += epoch[c].busy;
      sum[c].latency += epoch[c].latency;
    }
  }
  // A way stuck in a state of its own making sits out kStuckEpochs epochs,
  // twice as many each time again, lest the replays bring it back into the
  // state that tipped it.
  const Time now = clock_->Now();
  if (Stuck(log.live_bad, log.live_window, log.scores.back()[log.choice].bad, log.window_size)) {
    const int strikes = std::min(log.strikes[log.choice]++, 10);
    log.benched_until[log.choice] = now + (options_.adaptive_epoch * kStuckEpochs << strikes);
  }
  for (size_t c = 0; c < sum.size(); ++c) {
    if (now < log.benched_until[c]) sum[c].excess = std::numeric_limits<double>::infinity();
  }
  const int choice = BestChoice(sum, options_.deferral);
  if (choice == log.choice) return;
  log.choice = choice;
  ++switches_;
  inner_.SetRankPolicy(r, AdaptiveChoices()[choice].policy);
}

std::vector<std::string> AdaptiveScheduler::Choices() const {
  std::vector<std::string> out;
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) out.emplace_back(choice(r));
  return out;
}

}  // namespace tutti
