#include "tutti/scheduler/sharded_scheduler.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

// One shard: its sub-clusters as a spec of their own (local ids), the
// policy's scheduler on the shard's clock, and a listener that turns local
// ids back into global ones. On cache lines of its own: `queued` is
// written by the shard's thread at every event.
class alignas(64) ShardedScheduler::Shard final : public SchedulerListener {
 public:
  Shard(SchedulerShard where, SchedulerListener* out) : where(std::move(where)), out_(out) {}

  void OnDispatch(Batch batch) override {
    Published();
    batch.model = global_model[batch.model];
    batch.gpu = global_gpu[batch.gpu];
    for (Request& r : batch.requests) r.model = batch.model;
    out_->OnDispatch(std::move(batch));
  }
  void OnDrop(const Request& request, DropReason reason) override {
    Published();
    Request r = request;
    r.model = global_model[r.model];
    out_->OnDrop(r, reason);
  }
  // Makes the scheduler's count readable from other threads.
  void Published() { queued.store(scheduler->queued(), std::memory_order_relaxed); }

  const SchedulerShard where;
  ClusterSpec spec;
  std::vector<ModelId> global_model;  // local model id → global
  std::vector<GpuId> global_gpu;      // local GPU id → global
  std::unique_ptr<Scheduler> scheduler;
  std::atomic<int64_t> queued = 0;

 private:
  SchedulerListener* const out_;
};

absl::StatusOr<std::unique_ptr<ShardedScheduler>> ShardedScheduler::Create(const std::string& policy,
                                                                         const ClusterSpec& spec,
                                                                         const SchedulerOptions& options,
                                                                         std::vector<SchedulerShard> shards,
                                                                         SchedulerListener* listener) {
  TUTTI_ASSIGN_OR_RETURN(ShardPlan plan, PlanShards(spec, static_cast<int>(shards.size())));
  std::unique_ptr<ShardedScheduler> s(new ShardedScheduler());
  s->models_ = static_cast<int>(spec.models.size());
  s->membership_ = policy != "nexus";
  s->model_place_ = std::move(plan.model);
  s->gpu_place_ = std::move(plan.gpu);
  for (SchedulerShard& where : shards) {
    if (where.clock == nullptr) return absl::InvalidArgumentError("a scheduler shard without a clock");
    s->shards_.push_back(std::make_unique<Shard>(std::move(where), listener));
  }
  for (int shard = 0; shard < s->shards(); ++shard) {
    Shard& sh = *s->shards_[shard];
    const SchedulerOptions local_options = ShardOptions(options, plan.shards[shard]);
    sh.spec = std::move(plan.shards[shard].spec);
    sh.global_model = std::move(plan.shards[shard].global_model);
    sh.global_gpu = std::move(plan.shards[shard].global_gpu);
    TUTTI_ASSIGN_OR_RETURN(sh.scheduler, CreateScheduler(policy, sh.spec, local_options, sh.where.clock, &sh));
  }
  return s;
}

ShardedScheduler::~ShardedScheduler() = default;

void ShardedScheduler::Run(int shard, std::function<void(Shard&)> fn) {
  Shard& sh = *shards_[shard];
  if (!sh.where.post) return fn(sh);
  sh.where.post([&sh, fn = std::move(fn)] { fn(sh); });
}

void ShardedScheduler::Submit(const Request& request) {
  const Place& p = model_place_[request.model];
  Request local = request;
  local.model = p.local;
  Shard& sh = *shards_[p.shard];
  if (sh.where.post) {
    sh.where.post([&sh, local] {
      sh.scheduler->Submit(local);
      sh.Published();
    });
    return;
  }
  sh.scheduler->Submit(local);  // the hot path: no hand-off, no lock
  sh.Published();
}

int64_t ShardedScheduler::queued_in(int shard) const {
  return shards_[shard]->queued.load(std::memory_order_relaxed);
}

int64_t ShardedScheduler::queued() const {
  int64_t n = 0;
  for (int i = 0; i < shards(); ++i) n += queued_in(i);
  return n;
}

void ShardedScheduler::Withdraw(RequestId id, ModelId model) {
  const Place& p = model_place_[model];
  Run(p.shard, [id, local = p.local](Shard& sh) {
    sh.scheduler->Withdraw(id, local);
    sh.Published();
  });
}

void ShardedScheduler::OnBatchDone(GpuId gpu) {
  const Place p = gpu_place_[gpu];
  Run(p.shard, [p](Shard& sh) { sh.scheduler->OnBatchDone(p.local); });
}

void ShardedScheduler::OnRequestsWithdrawn(GpuId gpu, Time exec_at, int remaining) {
  const Place p = gpu_place_[gpu];
  Run(p.shard, [p, exec_at, remaining](Shard& sh) { sh.scheduler->OnRequestsWithdrawn(p.local, exec_at, remaining); });
}

absl::Status ShardedScheduler::SetGpuUp(GpuId gpu, bool up, Time free_at) {
  if (!membership_) return Scheduler::SetGpuUp(gpu, up, free_at);
  const Place p = gpu_place_[gpu];
  Run(p.shard, [p, up, free_at](Shard& sh) { (void)sh.scheduler->SetGpuUp(p.local, up, free_at); });
  return absl::OkStatus();
}

void ShardedScheduler::SetDelayPlan(const DelayPlan& plan) {
  for (int i = 0; i < shards(); ++i) {
    const Shard& sh = *shards_[i];
    DelayPlan local = plan;
    if (!plan.compute.empty()) {
      const int models = static_cast<int>(sh.global_model.size());
      local.compute.assign(sh.global_gpu.size() * models, ComputePlan{});
      for (size_t g = 0; g < sh.global_gpu.size(); ++g) {
        for (int m = 0; m < models; ++m) {
          local.compute[g * models + m] = plan.Compute(sh.global_gpu[g], sh.global_model[m], models_);
        }
      }
    }
    Run(i, [local = std::move(local)](Shard& target) { target.scheduler->SetDelayPlan(local); });
  }
}

}  // namespace tutti
