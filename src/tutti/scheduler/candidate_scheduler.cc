#include "tutti/scheduler/candidate_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace tutti {

CandidateScheduler::CandidateScheduler(const ClusterSpec& spec, const SchedulerOptions& options,
                                       Clock* clock, SchedulerListener* listener, const RankPolicy& policy)
    : spec_(spec),
      options_(options),
      plan_{spec.delays, options.frontrun_slack, {}},
      worst_(spec.models.size()),
      clock_(clock),
      listener_(listener) {
  models_.resize(spec_.models.size());
  const std::vector<SubCluster> subs = spec_.EffectiveSubClusters();
  ranks_.resize(subs.size());
  for (int r = 0; r < static_cast<int>(subs.size()); ++r) {
    ranks_[r].policy = policy;
    for (ModelId m : subs[r].models) {
      models_[m].rank = r;
      const LatencyProfile& p = spec_.models[m].profile;
      models_[m].strong = 3 * (p.Latency(2) - p.Latency(1)) < p.Latency(1);
    }
    for (int i = 0; i < subs[r].num_gpus; ++i) {
      const GpuId g = static_cast<GpuId>(gpus_.size());
      gpus_.push_back(GpuState{r, clock_->Now(), kNoTimer});
      ranks_[r].available.insert(g);
    }
  }
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) CountGpus(r);
  if (policy.hold != RankPolicy::Hold::kToFrontrun) TrackArrivals();
}

void CandidateScheduler::TrackArrivals() {
  // Beyond a few full batches outstanding, batches are full anyway.
  static constexpr Duration kEpoch = kSecond;
  for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) {
    const int max_count = std::clamp(4 * spec_.models[m].EffectiveMaxBatch() + 1, 8, 1024);
    if (!models_[m].outlook) models_[m].outlook.emplace(max_count, kEpoch, clock_->Now());
  }
}

void CandidateScheduler::CountGpus(int rank) {
  int up = 0, models = 0;
  for (const GpuState& g : gpus_) up += g.rank == rank && !g.down;
  for (const ModelState& m : models_) models += m.rank == rank;
  ranks_[rank].up = up;
  for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) {
    if (models_[m].rank != rank) continue;
    models_[m].gpus = static_cast<double>(up) / std::max(1, models);
    ComputeWork(m);
  }
}

CandidateScheduler::~CandidateScheduler() {
  for (ModelState& m : models_) clock_->Cancel(m.timer);
  for (GpuState& g : gpus_) clock_->Cancel(g.timer);
  for (const auto& [id, timer] : delay_timers_) clock_->Cancel(timer);
}

void CandidateScheduler::Submit(const Request& request) {
  if (ModelState& s = models_[request.model]; s.outlook) {
    s.outlook->Arrive(clock_->Now());
    AddDemand(s.rank, clock_->Now(), static_cast<double>(s.work));
  }
  EnqueueByDeadline(&models_[request.model].queue, request);
  ++queued_;
  if (request.delay_at != kInfiniteFuture && request.level < kDelayedLevel) {
    delay_timers_[request.id] = clock_->ScheduleAt(request.delay_at, [this, id = request.id, m = request.model] {
      delay_timers_.erase(id);
      Delay(id, m);
    });
  }
  Refresh(request.model);
}

std::optional<Request> CandidateScheduler::Unqueue(ModelId m, RequestId id) {
  RequestQueue& q = models_[m].queue;
  const auto it = std::find_if(q.begin(), q.end(), [id](const Request& r) { return r.id == id; });
  if (it == q.end()) return std::nullopt;
  const Request r = *it;
  q.erase(it);
  return r;
}

void CandidateScheduler::Delay(RequestId id, ModelId m) {
  std::optional<Request> r = Unqueue(m, id);
  if (!r) return;  // in a batch or dropped by now
  r->level = kDelayedLevel;
  EnqueueByDeadline(&models_[m].queue, *r);
  Refresh(m);
}

std::vector<bool> CandidateScheduler::ClosedLoops() {
  std::vector<bool> closed(models_.size());
  for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) {
    closed[m] = models_[m].outlook && models_[m].outlook->Closed(clock_->Now());
  }
  return closed;
}

std::vector<GpuId> CandidateScheduler::DownGpus() const {
  std::vector<GpuId> down;
  for (GpuId g = 0; g < static_cast<GpuId>(gpus_.size()); ++g) {
    if (gpus_[g].down) down.push_back(g);
  }
  return down;
}

void CandidateScheduler::SetRankPolicy(int rank, const RankPolicy& policy) {
  RankState& r = ranks_[rank];
  if (r.policy == policy) return;
  r.policy = policy;
  if (policy.hold != RankPolicy::Hold::kToFrontrun) TrackArrivals();
  if (policy.scarce_take) ArmDeferred(rank);  // scarce takes need every release
  for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) {
    if (models_[m].rank == rank && !models_[m].queue.empty()) Refresh(m);
  }
  if (policy.scarce_take) OfferFreeGpus(rank);
}

Candidate CandidateScheduler::Compute(ModelId m, Time now, Time gpu_free) {
  const RankPolicy& policy = ranks_[models_[m].rank].policy;
  const bool drop = models_[m].strong ? policy.drop_strong : policy.drop_weak;
  BatchContext ctx{now,
                   gpu_free,
                   &spec_.models[m],
                   plan_.network,
                   drop ? options_.drop : DropPolicy::kLazy,
                   plan_.frontrun_slack,
                   worst_[m],
                   plan_.head_guard};
  ctx.head_guard_share = options_.head_guard_share;
  ctx.floor_delays = &spec_.delays;
  ctx.gpus = models_[m].gpus;
  const std::vector<Time>& ran = models_[m].level_ran_at;
  if (!ran.empty() && !models_[m].queue.empty()) {
    for (size_t level = models_[m].queue.front().level + 1; level < ran.size(); ++level) {
      ctx.lower_level_ran = std::max(ctx.lower_level_ran, ran[level]);
    }
  }
  return ComputeCandidate(policy.kind, &models_[m].queue, ctx, [this, now](const Request& r, DropReason why) {
    --queued_;
    if (ModelState& s = models_[r.model]; s.outlook) s.outlook->Drop(now);
    listener_->OnDrop(r, why);
  });
}

// Recomputes m's candidate and files it: a timer for a future dispatch time,
// else straight to the rank (a GPU if one is available, the ready set if not).
void CandidateScheduler::Refresh(ModelId m) {
  ModelState& s = models_[m];
  Unready(m);
  clock_->Cancel(s.timer);
  s.timer = kNoTimer;
  const Time now = clock_->Now();  // one reading per event: a real clock moves
  s.recheck_at = kInfiniteFuture;
  s.candidate = Compute(m, now, now);
  if (s.candidate.size == 0) return;
  if (s.candidate.dispatch_at > now) {
    RankState& rank = ranks_[s.rank];
    if (rank.policy.hold != RankPolicy::Hold::kToFrontrun) {
      CatchUpDeferred(s.rank, now);
      if (rank.available.empty()) {
        ArmDeferred(s.rank);  // a GPU coming free may take it before its time
      } else if (const GpuId g = *rank.available.begin(); !Holds(m, g, now)) {
        Grant(m, g);
        return;
      }
      s.filed = ModelState::Filed::kWaiting;
      s.key = {s.candidate.latest_dispatch, m};
      rank.waiting.insert(s.key);
    }
    // A hold the outlook may soon think better of is looked at again then.
    s.timer = clock_->ScheduleAt(std::min(s.candidate.dispatch_at, s.recheck_at), [this, m] { Refresh(m); });
    if (rank.policy.scarce_take) OfferFreeGpus(s.rank);
    return;
  }
  MakeReady(m);
}

bool CandidateScheduler::Holds(ModelId m, GpuId g, Time now) {
  ModelState& s = models_[m];
  const ModelSpec& spec = spec_.models[m];
  const Candidate& c = s.candidate;
  const int room = spec.EffectiveMaxBatch() - c.size;
  const bool closed = m < static_cast<ModelId>(assumed_closed_.size()) && assumed_closed_[m];
  if (room <= 0 || !s.outlook || closed || s.outlook->Closed(now)) return false;
  HoldCase hold{.size = c.size, .wait = c.dispatch_at - now};
  const ArrivalOutlook::Forecast forecast = s.outlook->Expected(now, hold.wait);
  hold.arrivals = forecast.arrivals;
  s.recheck_at = forecast.recheck == ArrivalOutlook::kNever ? kInfiniteFuture : now + forecast.recheck;
  const int more = std::clamp(static_cast<int>(std::ceil(hold.arrivals)), 1, room);
  const ComputePlan& compute = worst_[m];
  auto occupancy = [&](int b) { return compute.Occupancy(spec.profile, b); };
  hold.extra_batch = occupancy(c.size) + occupancy(more) - occupancy(c.size + more);
  if (ranks_[s.rank].policy.hold == RankPolicy::Hold::kWhileBatchMatesCome) {
    return hold.arrivals >= kLikelyArrivals;  // a likely batch-mate is worth the wait
  }
  hold.price = options_.gpu_ms_price;
  if (options_.deferral == Deferral::kLatency && Load(s.rank, now) < kFreeBelowLoad) {
    const Time done = std::max(now + plan_.network.Dispatch(c.size), gpus_[g].free_at) + occupancy(c.size);
    if (done <= c.exec_at) hold.price = 0;  // back before the held batch would start
  }
  return HoldPays(hold);
}

double CandidateScheduler::Load(int rank, Time now) const {
  const RankState& r = ranks_[rank];
  if (r.demand_since < 0) return 0;
  const double memory = static_cast<double>(kLoadMemory);
  const double decayed = r.demand * std::exp(-static_cast<double>(now - r.demand_at) / memory);
  // The weight the decay has given the time since the first demand.
  const double since = static_cast<double>(std::max<Duration>(now - r.demand_since, kMillisecond));
  return decayed / (memory * -std::expm1(-since / memory)) / std::max(1, r.up);
}

void CandidateScheduler::AddDemand(int rank, Time now, double demand) {
  RankState& r = ranks_[rank];
  if (r.demand_since < 0) r.demand_since = now;
  r.demand = r.demand * std::exp(-static_cast<double>(now - r.demand_at) / static_cast<double>(kLoadMemory)) + demand;
  r.demand_at = now;
}

ModelId CandidateScheduler::PromptTake(int rank, GpuId g, Time now) {
  for (const ReadyKey& key : ranks_[rank].waiting) {
    if (!Holds(key.second, g, now)) return key.second;
  }
  return -1;
}

ModelId CandidateScheduler::ScarceTake(int rank, GpuId g, Time now) const {
  int waiting = 0;
  ModelId best = -1;
  Time first_dispatch = kInfiniteFuture;
  for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) {
    const ModelState& s = models_[m];
    if (s.rank != rank || s.candidate.size == 0 || s.filed == ModelState::Filed::kReady) continue;
    ++waiting;
    first_dispatch = std::min(first_dispatch, s.candidate.dispatch_at);
    if (best < 0 || s.candidate.latest_dispatch < models_[best].candidate.latest_dispatch) best = m;
  }
  if (best < 0 || first_dispatch <= now) return -1;
  int free = 0;  // by the first dispatch time
  for (GpuId h = 0; h < static_cast<GpuId>(gpus_.size()); ++h) {
    const GpuState& gs = gpus_[h];
    if (gs.rank != rank || gs.down) continue;
    free += h == g || ranks_[rank].available.contains(h) || gs.free_at - plan_.network.ctrl <= first_dispatch;
  }
  return waiting > free ? best : -1;
}

void CandidateScheduler::OfferFreeGpus(int rank) {
  const std::set<GpuId>& available = ranks_[rank].available;
  while (!available.empty()) {
    const GpuId g = *available.begin();
    const ModelId m = ScarceTake(rank, g, clock_->Now());
    if (m < 0) return;
    Grant(m, g);
  }
}

void CandidateScheduler::MakeReady(ModelId m) {
  ModelState& s = models_[m];
  RankState& rank = ranks_[s.rank];
  CatchUpDeferred(s.rank, clock_->Now());
  if (!rank.available.empty()) {
    Grant(m, *rank.available.begin());
    return;
  }
  s.filed = ModelState::Filed::kReady;
  s.key = {s.candidate.priority, m};
  rank.ready.insert(s.key);
  ArmDeferred(s.rank);  // it waits for a GPU: their releases must grant it
  if (s.candidate.latest_dispatch != kInfiniteFuture) {
    // Past its latest moment the candidate must shrink (or its head drop).
    s.timer = clock_->ScheduleAt(s.candidate.latest_dispatch + 1, [this, m] { Refresh(m); });
  }
}

void CandidateScheduler::Unready(ModelId m) {
  ModelState& s = models_[m];
  if (s.filed == ModelState::Filed::kNone) return;
  (s.filed == ModelState::Filed::kReady ? ranks_[s.rank].ready : ranks_[s.rank].waiting).erase(s.key);
  s.filed = ModelState::Filed::kNone;
}

void CandidateScheduler::Grant(ModelId m, GpuId g) {
  ranks_[gpus_[g].rank].available.erase(g);
  ModelState& s = models_[m];
  Unready(m);
  clock_->Cancel(s.timer);
  s.timer = kNoTimer;
  // Algorithm 1's Dispatch: refresh the batch for this GPU's free time.
  const Time now = clock_->Now();
  const Candidate c = Compute(m, now, std::max(now, gpus_[g].free_at));
  if (c.size == 0) {
    s.candidate = c;
    Release(g);
    return;
  }
  Dispatch(m, g, c.size, now);
  Refresh(m);  // prepare the model's next batch
}

// GPU g can take a batch: give it to the best valid sendable candidate, or
// keep it available.
void CandidateScheduler::Release(GpuId g) {
  gpus_[g].timer = kNoTimer;
  if (gpus_[g].down) return;
  RankState& rank = ranks_[gpus_[g].rank];
  const Time now = clock_->Now();
  while (!rank.ready.empty()) {
    const ModelId m = rank.ready.begin()->second;
    if (models_[m].candidate.latest_dispatch < now) {
      Refresh(m);  // shrinks or drops; may re-enter the ready set
      continue;
    }
    Grant(m, g);
    return;
  }
  if (rank.policy.scarce_take) {
    if (const ModelId m = ScarceTake(gpus_[g].rank, g, now); m >= 0) return Grant(m, g);
  }
  if (rank.policy.hold != RankPolicy::Hold::kToFrontrun) {
    if (const ModelId m = PromptTake(gpus_[g].rank, g, now); m >= 0) return Grant(m, g);
  }
  rank.available.insert(g);
}

void CandidateScheduler::Dispatch(ModelId m, GpuId g, int size, Time now) {
  GpuState& gpu = gpus_[g];
  const Time exec_at = std::max(now + plan_.network.Dispatch(size), gpu.free_at);
  const ComputePlan& compute = plan_.Compute(g, m, static_cast<int>(models_.size()));
  Batch batch = TakeBatch(&models_[m].queue, m, g, exec_at, compute.Occupancy(spec_.models[m].profile, size), size);
  queued_ -= size;
  if (const int lowest = batch.requests.back().level; lowest > 0) {
    std::vector<Time>& ran = models_[m].level_ran_at;
    if (ran.size() <= static_cast<size_t>(lowest)) ran.resize(lowest + 1, std::numeric_limits<Time>::min());
    for (const Request& r : batch.requests) ran[r.level] = now;
  }
  if (ModelState& s = models_[m]; s.outlook) {
    // Reported done (as options holding GPUs oblige), its requests leave
    // then — an executor runs its batches in order; else no sooner than if
    // it ran at once: a client answered early and sending again must not
    // seem to send while it waits.
    const uint64_t handle = s.outlook->Dispatch(now, size, now + batch.latency);
    if (options_.HoldsGpusUntilReported()) gpu.answering.emplace_back(m, handle);
    AddDemand(s.rank, now, std::max(0.0, static_cast<double>(batch.latency - s.work * size)));
  }
  gpu.free_at = batch.exec_at + batch.latency;
  gpu.last = {m, batch.exec_at};
  ++gpu.running;
  ScheduleRelease(g);
  listener_->OnDispatch(std::move(batch));
}

void CandidateScheduler::ScheduleRelease(GpuId g) {
  GpuState& gpu = gpus_[g];
  gpu.release_at = gpu.free_at - plan_.network.ctrl;
  RankState& rank = ranks_[gpu.rank];
  if (!rank.policy.scarce_take && !Awaits(g) && rank.ready.empty() && rank.waiting.empty()) {
    rank.deferred.push_back(g);
    return;
  }
  ArmRelease(g);
}

void CandidateScheduler::ArmRelease(GpuId g) {
  gpus_[g].timer = clock_->ScheduleAt(gpus_[g].release_at, [this, g] { OnReleaseTimer(g); });
}

void CandidateScheduler::OnReleaseTimer(GpuId g) {
  GpuState& gpu = gpus_[g];
  if (Full(g)) {
    gpu.timer = kNoTimer;
    Await(g);
    return;
  }
  Release(g);
}

void CandidateScheduler::Await(GpuId g) {
  GpuState& gpu = gpus_[g];
  gpu.awaiting = true;  // OnBatchDone releases it
  if (Awaits(g)) return;
  // max_in_flight: a report lost (with a distributed frontend that died
  // before passing its batch on) must not hold the GPU for ever.
  gpu.timer = clock_->ScheduleAt(std::max(clock_->Now(), gpu.free_at) + kReportOverdue, [this, g] {
    GpuState& late = gpus_[g];
    late.timer = kNoTimer;
    if (!late.awaiting || late.down) return;
    late.running = 0;
    late.awaiting = false;
    Release(g);
  });
}

void CandidateScheduler::CatchUpDeferred(int r, Time now) {
  std::vector<GpuId>& deferred = ranks_[r].deferred;
  const auto due = [&](GpuId g) { return gpus_[g].release_at <= now; };
  for (GpuId g : deferred) {
    if (!due(g)) continue;
    if (Full(g)) {
      Await(g);  // what OnReleaseTimer does
    } else {
      ranks_[r].available.insert(g);  // what Release(g) does with no candidate sendable
    }
  }
  deferred.erase(std::remove_if(deferred.begin(), deferred.end(), due), deferred.end());
}

void CandidateScheduler::ArmDeferred(int r) {
  for (GpuId g : ranks_[r].deferred) ArmRelease(g);
  ranks_[r].deferred.clear();
}

void CandidateScheduler::Withdraw(RequestId id, ModelId m) {
  const std::optional<Request> r = Unqueue(m, id);
  if (!r) return;
  --queued_;
  if (ModelState& s = models_[m]; s.outlook) s.outlook->Drop(clock_->Now());
  listener_->OnDrop(*r, DropReason::kWithdrawn);
  Refresh(m);
}

void CandidateScheduler::OnBatchDone(GpuId g) {
  GpuState& gpu = gpus_[g];
  gpu.running = std::max(0, gpu.running - 1);
  if (!gpu.answering.empty()) {
    const auto [m, handle] = gpu.answering.front();
    gpu.answering.pop_front();
    models_[m].outlook->Answered(clock_->Now(), handle);
  }
  if (Full(g) || !gpu.awaiting || gpu.down) return;
  gpu.awaiting = false;
  clock_->Cancel(gpu.timer);  // Await's
  gpu.free_at = std::max(gpu.free_at, clock_->Now());
  Release(g);
}

void CandidateScheduler::OnRequestsWithdrawn(GpuId g, Time exec_at, int remaining) {
  GpuState& gpu = gpus_[g];
  if (remaining == 0) {
    const bool released = gpu.awaiting;
    OnBatchDone(g);
    if (released) return;
  }
  if (gpu.last.model < 0 || gpu.last.exec_at != exec_at || gpu.down) return;  // not the last batch it was given
  // The GPU's planned time past what still runs is free, unless its release
  // already came (then it is available or given on). Batches before this
  // one end by its start.
  std::vector<GpuId>& deferred = ranks_[gpu.rank].deferred;
  const auto it = std::find(deferred.begin(), deferred.end(), g);
  if (gpu.timer == kNoTimer && it == deferred.end()) return;
  const Time now = clock_->Now();
  const ModelId m = gpu.last.model;
  Time free_at = exec_at;
  if (remaining > 0) {
    free_at += plan_.Compute(g, m, static_cast<int>(models_.size())).Occupancy(spec_.models[m].profile, remaining);
  } else if (gpu.running == 0) {
    free_at = now;
  }
  free_at = std::max(now, free_at);
  if (free_at >= gpu.free_at) return;
  if (it != deferred.end()) deferred.erase(it);
  clock_->Cancel(gpu.timer);
  gpu.timer = kNoTimer;
  gpu.free_at = free_at;
  if (free_at == now) {
    OnReleaseTimer(g);
  } else {
    ScheduleRelease(g);
  }
}

absl::Status CandidateScheduler::SetGpuUp(GpuId g, bool up, Time free_at) {
  GpuState& gpu = gpus_[g];
  if (up == !gpu.down) return absl::OkStatus();
  ranks_[gpu.rank].available.erase(g);
  std::vector<GpuId>& deferred = ranks_[gpu.rank].deferred;
  deferred.erase(std::remove(deferred.begin(), deferred.end(), g), deferred.end());
  clock_->Cancel(gpu.timer);
  gpu.timer = kNoTimer;
  gpu.running = 0;
  gpu.answering.clear();  // their predicted departures stand
  gpu.awaiting = false;
  gpu.down = !up;
  CountGpus(gpu.rank);  // early drop's window follows the GPUs up
  if (up) {
    gpu.free_at = std::max(clock_->Now(), free_at);
    gpu.timer = clock_->ScheduleAt(gpu.free_at - plan_.network.ctrl, [this, g] { Release(g); });
  }
  return absl::OkStatus();
}

void CandidateScheduler::ComputeWork(ModelId m) {
  ModelState& s = models_[m];
  const ModelSpec& spec = spec_.models[m];
  const int b = SustainedBatch(spec, s.gpus, spec.slo, worst_[m], plan_.network, plan_.frontrun_slack);
  s.work = worst_[m].Occupancy(spec.profile, b) / b;
}

void CandidateScheduler::SetDelayPlan(const DelayPlan& plan) {
  plan_ = plan;
  const int models = static_cast<int>(models_.size());
  for (ModelId m = 0; m < models; ++m) {
    std::optional<ComputePlan> worst;
    for (GpuId g = 0; g < static_cast<GpuId>(gpus_.size()); ++g) {
      if (gpus_[g].rank != models_[m].rank) continue;
      const ComputePlan& p = plan_.Compute(g, m, models);
      worst = worst ? ComputePlan::Worst(*worst, p) : p;
    }
    worst_[m] = worst.value_or(ComputePlan{});
    ComputeWork(m);
  }
}

}  // namespace tutti
