#include "tutti/scheduler/batch_policy.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tutti {

void EnqueueByDeadline(RequestQueue* queue, const Request& request) {
  auto before = [](const Request& a, const Request& b) {
    return a.level != b.level ? a.level < b.level : a.deadline < b.deadline;
  };
  if (queue->empty() || !before(request, queue->back())) {
    queue->push_back(request);
    return;
  }
  queue->insert(std::upper_bound(queue->begin(), queue->end(), request, before), request);
}

Batch TakeBatch(RequestQueue* queue, ModelId model, GpuId gpu, Time exec_at, Duration latency, int size) {
  Batch batch;
  batch.model = model;
  batch.gpu = gpu;
  batch.exec_at = exec_at;
  batch.latency = latency;
  batch.requests.assign(queue->begin(), queue->begin() + size);
  queue->erase(queue->begin(), queue->begin() + size);
  return batch;
}

bool HoldPays(const HoldCase& c) {
  if (c.arrivals <= 0 || c.price <= 0 || c.wait <= 0) return false;
  const double saved = (1 - std::exp(-c.arrivals)) * static_cast<double>(c.extra_batch);
  return c.price * saved > static_cast<double>(c.size) * static_cast<double>(c.wait);
}

int EarlyDropWindow(const BatchContext& ctx, Duration objective) {
  const ModelSpec& spec = *ctx.spec;
  if (spec.early_drop_window > 0) return std::min(spec.early_drop_window, spec.EffectiveMaxBatch());
  return SustainedBatch(spec, ctx.gpus, objective, ctx.compute, ctx.delays, ctx.frontrun_slack);
}

int SustainedBatch(const ModelSpec& spec, double gpus, Duration objective, const ComputePlan& compute,
                   const NetworkDelays& delays, Duration slack) {
  const double turns = 1 + std::min(1.0, 2 / std::max(1.0, gpus));
  auto sustained = [&](int b) {
    const double busy = turns * static_cast<double>(compute.Latency(spec.profile, b));
    return busy + static_cast<double>(delays.Dispatch(b) + delays.resp + slack) <= static_cast<double>(objective);
  };
  return std::max(1, LargestFitting(spec.EffectiveMaxBatch(), sustained));
}

namespace {

// The position after the last request of the level `queue[from]` is at.
size_t LevelEnd(const RequestQueue& queue, size_t from) {
  const int level = queue[from].level;
  if (queue.back().level == level) return queue.size();
  return static_cast<size_t>(
      std::partition_point(queue.begin() + static_cast<std::ptrdiff_t>(from), queue.end(),
                           [level](const Request& r) { return r.level == level; }) -
      queue.begin());
}

// The first request of each level below the head's waits behind every
// request above it: it is dropped (and the next of its level looked at)
// when even a batch of it and those ahead of it, sent now, would miss its
// deadline in the typical case — or, with early drop, when a batch of
// early drop's window would (as for the head, counting those ahead and
// none below; the lowest level queued is the one early drop thins).
void DropHopelessLowerLevels(RequestQueue* queue, const BatchContext& ctx, bool early, const DropFn& on_drop) {
  const ModelSpec& spec = *ctx.spec;
  const int max_batch = spec.EffectiveMaxBatch();
  const NetworkDelays& floor = ctx.floor_delays ? *ctx.floor_delays : ctx.delays;
  size_t p = LevelEnd(*queue, 0);
  while (p < queue->size()) {
    const Request& r = (*queue)[p];
    const int b = std::min<int>(max_batch, p + 1);
    bool keep = std::max(ctx.now + floor.Dispatch(b), ctx.gpu_free) + ctx.compute.Occupancy(spec.profile, b) <=
                r.deadline - floor.resp;
    DropReason reason = DropReason::kDeadline;
    if (keep && early) {
      const int window = std::min<int>(
          {max_batch, std::max<int>(b, EarlyDropWindow(ctx, r.deadline - r.arrival)), static_cast<int>(LevelEnd(*queue, p))});
      keep = std::max(ctx.now + ctx.delays.Dispatch(window), ctx.gpu_free) + ctx.compute.Latency(spec.profile, window) <=
             r.deadline - ctx.delays.resp;
      reason = DropReason::kEarlyDrop;
    }
    if (keep) {
      p = LevelEnd(*queue, p);
      continue;
    }
    on_drop(r, reason);
    queue->erase(queue->begin() + static_cast<std::ptrdiff_t>(p));
  }
}

}  // namespace

Candidate ComputeCandidate(BatchPolicyKind kind, RequestQueue* queue, const BatchContext& ctx,
                           const DropFn& on_drop) {
  const ModelSpec& spec = *ctx.spec;
  const LatencyProfile& profile = spec.profile;
  const int max_batch = spec.EffectiveMaxBatch();
  auto start = [&](int b) { return std::max(ctx.now + ctx.delays.Dispatch(b), ctx.gpu_free); };
  auto run = [&](int b) { return ctx.compute.Latency(profile, b); };
  // With priority levels, a batch of the first b requests is due by the
  // earliest deadline among them (earliest[b − 1]); with one level, the head's.
  std::vector<Time> earliest;
  auto due = [&](int b) { return earliest.empty() ? queue->front().deadline : earliest[b - 1]; };
  auto fits = [&](int b) { return start(b) + run(b) <= due(b) - ctx.delays.resp; };
  // The typical case: the configured delays, no compute tail.
  const NetworkDelays& floor = ctx.floor_delays ? *ctx.floor_delays : ctx.delays;
  auto start_typical = [&](int b) { return std::max(ctx.now + floor.Dispatch(b), ctx.gpu_free); };
  auto run_typical = [&](int b) { return ctx.compute.Occupancy(profile, b); };
  auto fits_typical = [&](int b) { return start_typical(b) + run_typical(b) <= due(b) - floor.resp; };
  const bool early = ctx.drop == DropPolicy::kEarly && kind != BatchPolicyKind::kTimeout;

  while (!queue->empty()) {
    DropReason reason = DropReason::kDeadline;
    bool keep = fits_typical(1);
    // With lower levels queued, the head is not dropped early: dropping
    // theirs keeps the batches full. Nor while a lower level runs: its
    // share of the GPUs is the head level's to take back.
    const Request& head = queue->front();
    const bool lower_running = ctx.lower_level_ran >= ctx.now - (head.deadline - head.arrival);
    if (keep && early && queue->back().level == head.level && !lower_running) {
      const int window = std::min<int>(EarlyDropWindow(ctx, head.deadline - head.arrival), queue->size());
      keep = fits(window);
      reason = DropReason::kEarlyDrop;
    }
    if (keep) break;
    on_drop(queue->front(), reason);
    queue->pop_front();
  }
  if (queue->empty()) return {};
  if (queue->back().level != queue->front().level) {
    DropHopelessLowerLevels(queue, ctx, early, on_drop);
    const int n = std::min<int>(max_batch, queue->size());
    earliest.resize(n);
    for (int i = 0; i < n; ++i) earliest[i] = std::min(i > 0 ? earliest[i - 1] : kInfiniteFuture, (*queue)[i].deadline);
  }

  const int cap = std::min<int>(max_batch, queue->size());
  Candidate c;
  if (kind == BatchPolicyKind::kTimeout) {
    c.size = cap;
    const Time trigger = queue->size() >= static_cast<size_t>(max_batch)
                             ? ctx.now
                             : queue->front().arrival + spec.max_queue_delay;
    c.exec_at = std::max(start(c.size), trigger);
    c.dispatch_at = c.exec_at - ctx.delays.Dispatch(c.size);
    c.priority = queue->front().arrival;  // oldest first, as Triton
    return c;
  }
  c.size = LargestFitting(cap, fits);
  if (c.size == 0) {  // a head that only fits the typical case: at once
    c.size = LargestFitting(cap, fits_typical);
    c.exec_at = start_typical(c.size);
    c.dispatch_at = c.exec_at - floor.Dispatch(c.size);
    c.latest_dispatch = due(c.size) - floor.resp - run_typical(c.size) - floor.Dispatch(c.size);
    c.priority = c.latest_dispatch;
    return c;
  }
  c.exec_at = start(c.size);
  const Time d = due(c.size) - ctx.delays.resp;  // when the batch's computation must end
  if (kind == BatchPolicyKind::kDeferred && c.size < max_batch) {
    const Request& head = queue->front();
    const Duration objective = head.deadline - head.arrival;
    const Duration guard =
        std::max(ctx.head_guard, static_cast<Duration>(ctx.head_guard_share * static_cast<double>(objective)));
    const Time frontrun = std::min(d - run(c.size + 1) - ctx.frontrun_slack, d - run(1) - guard);
    c.exec_at = std::max(c.exec_at, frontrun);
  }
  c.dispatch_at = c.exec_at - ctx.delays.Dispatch(c.size);
  c.latest_dispatch = d - run(c.size) - ctx.delays.Dispatch(c.size);
  c.priority = c.latest_dispatch;
  return c;
}

}  // namespace tutti
