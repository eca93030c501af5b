#include "tutti/scheduler/load_scheduler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

namespace tutti {

LoadScheduler::LoadScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                             SchedulerListener* listener)
    : spec_(spec), options_(options), plan_{spec.delays, 0, 0, {}}, clock_(clock), listener_(listener) {
  models_.resize(spec_.models.size());
  gpus_.resize(spec_.num_gpus());
  if (spec_.memory.limited()) return;
  for (Gpu& g : gpus_) {
    for (ModelId m = 0; m < static_cast<ModelId>(models_.size()); ++m) g.copies[m] = Copy{};
  }
}

LoadScheduler::~LoadScheduler() {
  for (Gpu& g : gpus_) clock_->Cancel(g.timer);
}

Duration LoadScheduler::Latency(GpuId g, ModelId m, int b) const {
  return plan_.Compute(g, m, static_cast<int>(models_.size())).Latency(spec_.models[m].profile, b);
}

double LoadScheduler::RateNow(ModelId m, Time now) const {
  const Model& model = models_[m];
  return model.rate * std::exp(-ToSeconds(now - model.rate_at) / ToSeconds(kRateMemory));
}

void LoadScheduler::Submit(const Request& request) {
  const Time now = clock_->Now();
  Model& model = models_[request.model];
  model.rate = RateNow(request.model, now) + 1 / ToSeconds(kRateMemory);
  model.rate_at = now;
  const Time old_head = model.queue.empty() ? kInfiniteFuture : model.queue.front().deadline;
  auto at = std::upper_bound(model.queue.begin(), model.queue.end(), request.deadline,
                             [](Time d, const Request& r) { return d < r.deadline; });
  model.queue.insert(at, request);
  ++queued_;
  Refile(request.model, old_head);
  for (GpuId g = 0; g < static_cast<GpuId>(gpus_.size()); ++g) Pump(g);
}

void LoadScheduler::Withdraw(RequestId id, ModelId model) {
  std::deque<Request>& queue = models_[model].queue;
  auto it = std::find_if(queue.begin(), queue.end(), [id](const Request& r) { return r.id == id; });
  if (it == queue.end()) return;
  const Time old_head = queue.front().deadline;
  const Request r = *it;
  queue.erase(it);
  --queued_;
  Refile(model, old_head);
  listener_->OnDrop(r, DropReason::kWithdrawn);
}

void LoadScheduler::Refile(ModelId m, Time old_head) {
  const std::deque<Request>& queue = models_[m].queue;
  const Time head = queue.empty() ? kInfiniteFuture : queue.front().deadline;
  if (head == old_head) return;
  if (old_head != kInfiniteFuture) urgent_.erase({old_head, m});
  if (head != kInfiniteFuture) urgent_.insert({head, m});
}

void LoadScheduler::DropBefore(ModelId m, Time end, DropReason reason) {
  std::deque<Request>& queue = models_[m].queue;
  const Time old_head = queue.empty() ? kInfiniteFuture : queue.front().deadline;
  std::vector<Request> dropped;
  while (!queue.empty() && end + plan_.network.resp > queue.front().deadline) {
    dropped.push_back(queue.front());
    queue.pop_front();
    --queued_;
  }
  Refile(m, old_head);
  for (const Request& r : dropped) listener_->OnDrop(r, reason);
}

void LoadScheduler::Wake(GpuId g, Time at) {
  Gpu& gpu = gpus_[g];
  if (at >= gpu.timer_at) return;
  clock_->Cancel(gpu.timer);
  gpu.timer_at = at;
  gpu.timer = clock_->ScheduleAt(at, [this, g] {
    gpus_[g].timer = kNoTimer;
    gpus_[g].timer_at = kInfiniteFuture;
    Pump(g);
  });
}

void LoadScheduler::Pump(GpuId g) {
  const Time now = clock_->Now();
  // Whatever can no longer be answered in time, on any GPU, leaves.
  while (!urgent_.empty() && urgent_.begin()->first < now + plan_.network.resp) {
    DropBefore(urgent_.begin()->second, now, DropReason::kDeadline);
  }
  Gpu& gpu = gpus_[g];
  if (gpu.compute_free <= now) RunBatch(g, now);
  if (gpu.copy_free <= now) StartLoad(g, now);
  // Again when the compute or the copy engine frees (a load's end), and
  // by the first head's deadline at the latest, when whatever waits is
  // answered or dropped.
  Time next = kInfiniteFuture;
  if (gpu.compute_free > now) next = gpu.compute_free;
  if (gpu.copy_free > now) next = std::min(next, gpu.copy_free);
  if (!urgent_.empty()) next = std::min(next, urgent_.begin()->first - plan_.network.resp + 1);
  if (next != kInfiniteFuture) Wake(g, next);
}

Time LoadScheduler::LoadStart(GpuId g, Time now) const {
  const Gpu& gpu = gpus_[g];
  const bool blocks = options_.load_mode == SchedulerOptions::LoadMode::kFirstRequest;
  return std::max({now, gpu.copy_free, blocks ? gpu.compute_free : now});
}

Time LoadScheduler::EarliestEnd(GpuId g, ModelId m, Time now) const {
  const Gpu& gpu = gpus_[g];
  Time start = std::max(now, gpu.compute_free);
  if (auto it = gpu.copies.find(m); it != gpu.copies.end()) {
    start = std::max(start, it->second.ready_at);
  } else {
    start = std::max(start, LoadStart(g, now) + spec_.LoadTime(m));
  }
  return start + plan_.network.Dispatch(1) + Latency(g, m, 1);
}

bool LoadScheduler::RunBatch(GpuId g, Time now) {
  Gpu& gpu = gpus_[g];
  for (auto it = urgent_.begin(); it != urgent_.end();) {
    const ModelId m = it->second;
    ++it;  // DropBefore may refile m
    auto copy = gpu.copies.find(m);
    if (copy == gpu.copies.end() || copy->second.ready_at > now) continue;
    DropBefore(m, now + plan_.network.Dispatch(1) + Latency(g, m, 1), DropReason::kDeadline);
    std::deque<Request>& queue = models_[m].queue;
    if (queue.empty()) continue;
    // The largest batch whose head (the request due first) is still on time.
    const Time head = queue.front().deadline - plan_.network.resp;
    int b = std::min<int>(static_cast<int>(queue.size()), spec_.models[m].EffectiveMaxBatch());
    while (b > 1 && now + plan_.network.Dispatch(b) + Latency(g, m, b) > head) --b;
    Batch batch;
    batch.model = m;
    batch.gpu = g;
    batch.exec_at = now + plan_.network.Dispatch(b);
    batch.latency = Latency(g, m, b);
    const Time old_head = queue.front().deadline;
    batch.requests.assign(queue.begin(), queue.begin() + b);
    queue.erase(queue.begin(), queue.begin() + b);
    queued_ -= b;
    Refile(m, old_head);
    gpu.compute_free = batch.exec_at + plan_.Compute(g, m, static_cast<int>(models_.size()))
                                           .Occupancy(spec_.models[m].profile, b);
    copy->second.busy_until = gpu.compute_free;
    copy->second.last_used = now;
    listener_->OnDispatch(std::move(batch));
    return true;
  }
  return false;
}

bool LoadScheduler::StartLoad(GpuId g, Time now) {
  if (!spec_.memory.limited()) return false;
  const bool planned = options_.load_mode == SchedulerOptions::LoadMode::kPlanned;
  Gpu& gpu = gpus_[g];
  // (requests the load would serve, recent rate, model): the best last.
  std::vector<std::tuple<int64_t, double, ModelId>> candidates;
  for (auto it = urgent_.begin(); it != urgent_.end();) {
    const ModelId m = it->second;
    const Time head = it->first;
    ++it;  // DropBefore may refile m
    if (gpu.copies.contains(m)) continue;
    if (!planned) {
      bool copied = false;
      for (const Gpu& other : gpus_) copied |= other.copies.contains(m);
      if (copied) continue;
      candidates.emplace_back(0, 0, m);  // in deadline order
      continue;
    }
    // When its head could end at the earliest: anywhere, on a copy
    // elsewhere, and here after a load.
    Time best = kInfiniteFuture, elsewhere = kInfiniteFuture, here = kInfiniteFuture;
    for (GpuId h = 0; h < static_cast<GpuId>(gpus_.size()); ++h) {
      const Time end = EarliestEnd(h, m, now);
      best = std::min(best, end);
      if (h == g) here = end;
      if (h != g && gpus_[h].copies.contains(m)) elsewhere = std::min(elsewhere, end);
    }
    if (best + plan_.network.resp > head) {
      // No GPU could load it and run its head in time: what cannot make it
      // anywhere is dropped now, early.
      DropBefore(m, best, DropReason::kEarlyDrop);
      if (models_[m].queue.empty()) continue;
    }
    const std::deque<Request>& queue = models_[m].queue;
    if (elsewhere != kInfiniteFuture && elsewhere + plan_.network.resp <= queue.front().deadline) {
      continue;  // a copy elsewhere serves it in time
    }
    // The requests still on time after a load here.
    const Time due = here + plan_.network.resp;
    const int64_t on_time = queue.end() - std::lower_bound(queue.begin(), queue.end(), due,
                                                            [](const Request& r, Time d) { return r.deadline < d; });
    if (on_time > 0) candidates.emplace_back(on_time, RateNow(m, now), m);
  }
  // Planned: the load that serves the most requests waiting (then the
  // most popular model) first; on demand: the first due.
  if (planned) std::sort(candidates.begin(), candidates.end(), std::greater<>());
  for (const auto& [on_time, rate, m] : candidates) {
    const int64_t bytes = spec_.models[m].weights_bytes;
    std::vector<ModelId> evicted;
    if (!MakeRoom(g, bytes, now, &evicted)) continue;
    Load load;
    load.gpu = g;
    load.model = m;
    load.start = LoadStart(g, now);
    load.duration = spec_.LoadTime(m);
    load.evicted = std::move(evicted);
    const Time ready = load.start + load.duration;
    gpu.copies[m] = Copy{ready, 0, now};
    gpu.used += bytes;
    gpu.copy_free = ready;
    if (options_.load_mode == SchedulerOptions::LoadMode::kFirstRequest) gpu.compute_free = ready;
    listener_->OnLoad(load);
    return true;
  }
  return false;
}

bool LoadScheduler::MakeRoom(GpuId g, int64_t bytes, Time now, std::vector<ModelId>* evicted) {
  Gpu& gpu = gpus_[g];
  const int64_t need = gpu.used + bytes - spec_.memory.gpu_bytes;
  if (need <= 0) return true;
  const bool lru = options_.eviction == SchedulerOptions::Eviction::kLru;
  // (cost, last used, model): the cheapest first.
  std::vector<std::tuple<double, Time, ModelId>> victims;
  for (const auto& [m, copy] : gpu.copies) {
    if (copy.ready_at > now || copy.busy_until > now) continue;  // loading, or a batch running
    if (!lru && !models_[m].queue.empty()) continue;  // work waits for it here
    const double cost =
        lru ? 0 : RateNow(m, now) * ToSeconds(spec_.LoadTime(m));
    victims.emplace_back(cost, copy.last_used, m);
  }
  std::sort(victims.begin(), victims.end());
  int64_t freed = 0;
  size_t n = 0;
  while (n < victims.size() && freed < need) freed += spec_.models[std::get<2>(victims[n++])].weights_bytes;
  if (freed < need) return false;
  for (size_t i = 0; i < n; ++i) {
    const ModelId m = std::get<2>(victims[i]);
    gpu.copies.erase(m);
    gpu.used -= spec_.models[m].weights_bytes;
    evicted->push_back(m);
  }
  return true;
}

}  // namespace tutti
