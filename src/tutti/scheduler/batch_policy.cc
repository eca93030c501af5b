#include "tutti/scheduler/batch_policy.h"

#include <algorithm>
#include <cmath>

namespace tutti {

void EnqueueByDeadline(RequestQueue* queue, const Request& request) {
  if (queue->empty() || queue->back().deadline <= request.deadline) {
    queue->push_back(request);
    return;
  }
  auto pos = std::upper_bound(queue->begin(), queue->end(), request.deadline,
                              [](Time d, const Request& r) { return d < r.deadline; });
  queue->insert(pos, request);
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

Candidate ComputeCandidate(BatchPolicyKind kind, RequestQueue* queue, const BatchContext& ctx,
                           const DropFn& on_drop) {
  const ModelSpec& spec = *ctx.spec;
  const LatencyProfile& profile = spec.profile;
  const int max_batch = spec.EffectiveMaxBatch();
  auto start = [&](int b) { return std::max(ctx.now + ctx.delays.Dispatch(b), ctx.gpu_free); };
  auto run = [&](int b) { return ctx.compute.Latency(profile, b); };
  Time d = 0;  // the head's deadline for the computation to finish
  auto fits = [&](int b) { return start(b) + run(b) <= d; };
  // The typical case: the configured delays, no compute tail.
  const NetworkDelays& floor = ctx.floor_delays ? *ctx.floor_delays : ctx.delays;
  auto start_typical = [&](int b) { return std::max(ctx.now + floor.Dispatch(b), ctx.gpu_free); };
  auto run_typical = [&](int b) { return ctx.compute.Occupancy(profile, b); };
  auto fits_typical = [&](int b) {
    return start_typical(b) + run_typical(b) <= queue->front().deadline - floor.resp;
  };

  while (!queue->empty()) {
    d = queue->front().deadline - ctx.delays.resp;
    DropReason reason = DropReason::kDeadline;
    bool keep = fits_typical(1);
    if (keep && ctx.drop == DropPolicy::kEarly && kind != BatchPolicyKind::kTimeout) {
      const Request& head = queue->front();
      const int window = std::min<int>(EarlyDropWindow(ctx, head.deadline - head.arrival), queue->size());
      keep = fits(window);
      reason = DropReason::kEarlyDrop;
    }
    if (keep) break;
    on_drop(queue->front(), reason);
    queue->pop_front();
  }
  if (queue->empty()) return {};

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
    c.latest_dispatch = queue->front().deadline - floor.resp - run_typical(c.size) - floor.Dispatch(c.size);
    c.priority = c.latest_dispatch;
    return c;
  }
  c.exec_at = start(c.size);
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
