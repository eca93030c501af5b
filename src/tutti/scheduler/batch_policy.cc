#include "tutti/scheduler/batch_policy.h"

#include <algorithm>

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

Candidate ComputeCandidate(BatchPolicyKind kind, RequestQueue* queue, const BatchContext& ctx,
                           const DropFn& on_drop) {
  const ModelSpec& spec = *ctx.spec;
  const LatencyProfile& profile = spec.profile;
  const int max_batch = spec.EffectiveMaxBatch();
  auto start = [&](int b) { return std::max(ctx.now + ctx.delays.Dispatch(b), ctx.gpu_free); };
  auto run = [&](int b) { return ctx.compute.Latency(profile, b); };
  Time d = 0;  // the head's deadline for the computation to finish
  auto fits = [&](int b) { return start(b) + run(b) <= d; };

  while (!queue->empty()) {
    d = queue->front().deadline - ctx.delays.resp;
    DropReason reason = DropReason::kDeadline;
    bool keep = fits(1);
    if (keep && ctx.drop == DropPolicy::kEarly && kind != BatchPolicyKind::kTimeout) {
      const int window = std::min<int>(spec.EffectiveEarlyDropWindow(), queue->size());
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
  c.exec_at = start(c.size);
  if (kind == BatchPolicyKind::kDeferred && c.size < max_batch) {
    const Time frontrun = std::min(d - run(c.size + 1) - ctx.frontrun_slack, d - run(1) - ctx.head_guard);
    c.exec_at = std::max(c.exec_at, frontrun);
  }
  c.dispatch_at = c.exec_at - ctx.delays.Dispatch(c.size);
  c.latest_dispatch = d - run(c.size) - ctx.delays.Dispatch(c.size);
  c.priority = c.latest_dispatch;
  return c;
}

}  // namespace tutti
