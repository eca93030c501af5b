#include "tutti/scheduler/sharded_scheduler.h"

#include <algorithm>
#include <atomic>
#include <numeric>
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
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(spec));
  const std::vector<SubCluster> subs = spec.EffectiveSubClusters();
  if (shards.empty() || shards.size() > subs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(shards.size(), " scheduler shards for ", subs.size(),
                                                   " sub-clusters: a shard holds one or more whole sub-clusters"));
  }
  std::unique_ptr<ShardedScheduler> s(new ShardedScheduler());
  s->models_ = static_cast<int>(spec.models.size());
  s->membership_ = policy != "nexus";
  s->model_place_.resize(spec.models.size());
  s->gpu_place_.resize(spec.num_gpus());
  for (SchedulerShard& where : shards) {
    if (where.clock == nullptr) return absl::InvalidArgumentError("a scheduler shard without a clock");
    s->shards_.push_back(std::make_unique<Shard>(std::move(where), listener));
  }

  // Largest sub-cluster first onto the shard with the fewest GPUs so far.
  std::vector<GpuId> first_gpu(subs.size(), 0);
  for (size_t i = 1; i < subs.size(); ++i) first_gpu[i] = first_gpu[i - 1] + subs[i - 1].num_gpus;
  std::vector<int> order(subs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return subs[a].num_gpus > subs[b].num_gpus; });
  std::vector<int> load(shards.size(), 0);
  std::vector<std::vector<int>> placed(shards.size());
  for (int i : order) {
    const int shard = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[shard] += subs[i].num_gpus;
    placed[shard].push_back(i);
  }
  for (int shard = 0; shard < s->shards(); ++shard) {
    std::sort(placed[shard].begin(), placed[shard].end());  // keeps the spec's GPU order within a shard
    Shard& sh = *s->shards_[shard];
    sh.spec.delays = spec.delays;
    for (int i : placed[shard]) {
      SubCluster local{{}, subs[i].num_gpus};
      for (ModelId m : subs[i].models) {
        s->model_place_[m] = {shard, static_cast<int>(sh.spec.models.size())};
        local.models.push_back(static_cast<ModelId>(sh.spec.models.size()));
        sh.spec.models.push_back(spec.models[m]);
        sh.global_model.push_back(m);
      }
      for (int k = 0; k < subs[i].num_gpus; ++k) {
        s->gpu_place_[first_gpu[i] + k] = {shard, static_cast<int>(sh.global_gpu.size())};
        sh.global_gpu.push_back(first_gpu[i] + k);
      }
      sh.spec.sub_clusters.push_back(std::move(local));
    }
    SchedulerOptions local_options = options;
    if (!options.nexus_initial_rates.empty()) {
      local_options.nexus_initial_rates.clear();
      for (ModelId m : sh.global_model) {
        local_options.nexus_initial_rates.push_back(
            m < static_cast<ModelId>(options.nexus_initial_rates.size()) ? options.nexus_initial_rates[m] : 0);
      }
    }
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
