#include "tutti/serving/sharded_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<ShardedCore>> ShardedCore::Create(ClusterSpec spec, std::vector<ModelShape> shapes,
                                                                 std::vector<std::unique_ptr<Executor>> executors,
                                                                 const InferenceCore::Options& options, Clock* clock,
                                                                 int shards) {
  std::unique_ptr<ShardedCore> core(new ShardedCore(spec, shapes, clock));
  if (shards == 1) {  // the one core, over the spec as it is
    TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<InferenceCore> one,
                           InferenceCore::Create(std::move(spec), std::move(shapes), std::move(executors), options,
                                                 clock));
    core->cores_.push_back(std::move(one));
    return core;
  }
  // Named by the serve config's key, the only way to ask for shards.
  if (!options.stages.empty()) {
    return absl::InvalidArgumentError(
        "scheduler_shards: batch stages (ParM) submit to models of other sub-clusters: they need one shard");
  }
  absl::StatusOr<ShardPlan> plan = PlanShards(core->spec_, shards);
  if (!plan.ok()) return absl::Status(plan.status().code(), absl::StrCat("scheduler_shards: ", plan.status().message()));
  core->plan_ = std::move(*plan);
  if (static_cast<int>(executors.size()) != core->spec_.num_gpus() || shapes.size() != core->spec_.models.size()) {
    return absl::InvalidArgumentError("executors or model shapes do not match the cluster");
  }
  for (const ShardPlan::Shard& sh : core->plan_.shards) {
    std::vector<ModelShape> local_shapes;
    for (ModelId m : sh.global_model) local_shapes.push_back(shapes[m]);
    std::vector<std::unique_ptr<Executor>> local_executors;
    for (GpuId g : sh.global_gpu) local_executors.push_back(std::move(executors[g]));
    InferenceCore::Options local = options;
    local.scheduler = ShardOptions(options.scheduler, sh);
    TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<InferenceCore> c,
                           InferenceCore::Create(sh.spec, std::move(local_shapes), std::move(local_executors), local,
                                                 clock));
    core->cores_.push_back(std::move(c));
  }
  return core;
}

void ShardedCore::Globalize(int shard, InferenceOutcome& out) const {
  const ShardPlan::Shard& sh = plan_.shards[shard];
  if (out.executor >= 0) out.executor = sh.global_gpu[out.executor];
  // Batch ids name their shard, so that a written answer finds it again.
  if (out.batch_id != 0) out.batch_id = out.batch_id * shards() + shard;
}

absl::Status ShardedCore::Submit(ModelId model, std::vector<float> input, Duration objective,
                                 InferenceCallback done) {
  return SubmitWith(model, {}, std::move(input), objective, std::move(done));
}

absl::Status ShardedCore::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                     Duration objective, InferenceCallback done) {
  if (shards() == 1) return cores_[0]->SubmitWith(model, context, std::move(input), objective, std::move(done));
  if (model < 0 || model >= static_cast<ModelId>(spec_.models.size())) {
    return CheckSubmission(spec_, shapes_, model, input.size(), objective);
  }
  const ShardPlan::Place p = plan_.model[model];
  return cores_[p.shard]->SubmitWith(p.local, context, std::move(input), objective,
                                     [this, shard = p.shard, done = std::move(done)](InferenceOutcome out) {
                                       Globalize(shard, out);
                                       done(std::move(out));
                                     });
}

void ShardedCore::StopAccepting() {
  for (auto& c : cores_) c->StopAccepting();
}

void ShardedCore::WaitIdle() {
  for (auto& c : cores_) c->WaitIdle();
}

int64_t ShardedCore::in_flight() const {
  int64_t n = 0;
  for (const auto& c : cores_) n += c->in_flight();
  return n;
}

int64_t ShardedCore::WeightsLoads() const {
  int64_t n = 0;
  for (const auto& c : cores_) n += c->WeightsLoads();
  return n;
}

std::vector<ModelCounters> ShardedCore::Counters() const {
  if (shards() == 1) return cores_[0]->Counters();
  std::vector<ModelCounters> out(spec_.models.size());
  for (int s = 0; s < shards(); ++s) {
    const ShardPlan::Shard& sh = plan_.shards[s];
    std::vector<ModelCounters> local = cores_[s]->Counters();
    for (size_t m = 0; m < local.size(); ++m) {
      if (local[m].loaded_on) {
        for (int& g : *local[m].loaded_on) g = sh.global_gpu[g];
      }
      out[sh.global_model[m]] = std::move(local[m]);
    }
  }
  return out;
}

template <typename T>
std::vector<T> ShardedCore::ByExecutor(std::vector<T> (InferenceCore::*per_shard)() const) const {
  if (shards() == 1) return (cores_[0].get()->*per_shard)();
  std::vector<T> out(spec_.num_gpus(), T{});
  for (int s = 0; s < shards(); ++s) {
    const std::vector<T> local = (cores_[s].get()->*per_shard)();
    for (size_t g = 0; g < local.size(); ++g) out[plan_.shards[s].global_gpu[g]] = local[g];
  }
  return out;
}

std::vector<double> ShardedCore::BusyFractions() const { return ByExecutor(&InferenceCore::BusyFractions); }

std::vector<Duration> ShardedCore::BusyTimes() const { return ByExecutor(&InferenceCore::BusyTimes); }

std::vector<BatchTrace> ShardedCore::RecentBatches(Time since) const {
  if (shards() == 1) return cores_[0]->RecentBatches(since);
  std::vector<BatchTrace> out;
  for (int s = 0; s < shards(); ++s) {
    const ShardPlan::Shard& sh = plan_.shards[s];
    for (BatchTrace t : cores_[s]->RecentBatches(since)) {
      t.executor = sh.global_gpu[t.executor];
      t.model = sh.global_model[t.model];
      out.push_back(t);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const BatchTrace& a, const BatchTrace& b) { return a.finished < b.finished; });
  return out;
}

void ShardedCore::OnAnswerWritten(const WrittenAnswer& answer) {
  if (shards() == 1 || answer.batch == 0) return cores_[0]->OnAnswerWritten(answer);
  WrittenAnswer local = answer;
  local.batch = answer.batch / shards();
  cores_[answer.batch % shards()]->OnAnswerWritten(local);
}

DelayReport ShardedCore::Delays() const {
  if (shards() == 1) return cores_[0]->Delays();
  const int models = static_cast<int>(spec_.models.size());
  DelayReport out;
  out.plan.compute.assign(static_cast<size_t>(spec_.num_gpus()) * models, ComputePlan{});
  std::vector<std::string> choices(spec_.EffectiveSubClusters().size());
  bool any_choice = false;
  for (int s = 0; s < shards(); ++s) {
    const ShardPlan::Shard& sh = plan_.shards[s];
    const int local_models = static_cast<int>(sh.global_model.size());
    DelayReport r = cores_[s]->Delays();
    if (s == 0) {
      out.options = r.options;
      out.estimates = r.estimates;
      out.estimates.compute.clear();
      out.plan.network = r.plan.network;
      out.plan.frontrun_slack = r.plan.frontrun_slack;
      out.plan.head_guard = r.plan.head_guard;
    }
    NetworkDelays& n = out.plan.network;
    n.ctrl = std::max(n.ctrl, r.plan.network.ctrl);
    n.data_per_request = std::max(n.data_per_request, r.plan.network.data_per_request);
    n.resp = std::max(n.resp, r.plan.network.resp);
    out.plan.frontrun_slack = std::max(out.plan.frontrun_slack, r.plan.frontrun_slack);
    out.plan.head_guard = std::max(out.plan.head_guard, r.plan.head_guard);
    for (size_t g = 0; g < sh.global_gpu.size(); ++g) {
      for (int m = 0; m < local_models; ++m) {
        out.plan.compute[static_cast<size_t>(sh.global_gpu[g]) * models + sh.global_model[m]] =
            r.plan.Compute(static_cast<GpuId>(g), m, local_models);
      }
    }
    for (DelayEstimates::Compute c : r.estimates.compute) {
      c.gpu = sh.global_gpu[c.gpu];
      c.model = sh.global_model[c.model];
      out.estimates.compute.push_back(c);
    }
    for (size_t k = 0; k < out.histograms.size(); ++k) {
      for (size_t b = 0; b < out.histograms[k].counts.size(); ++b) out.histograms[k].counts[b] += r.histograms[k].counts[b];
      out.histograms[k].sum += r.histograms[k].sum;
    }
    for (size_t i = 0; i < r.choices.size() && i < sh.global_sub_cluster.size(); ++i) {
      choices[sh.global_sub_cluster[i]] = r.choices[i];
    }
    any_choice = any_choice || !r.choices.empty();
  }
  if (any_choice) out.choices = std::move(choices);  // policies without choices give none
  return out;
}

absl::Status ShardedCore::SetExecutorUp(GpuId executor, bool up) {
  if (shards() == 1) return cores_[0]->SetExecutorUp(executor, up);
  if (executor < 0 || executor >= spec_.num_gpus()) {
    return absl::InvalidArgumentError("no executor " + std::to_string(executor));
  }
  const ShardPlan::Place p = plan_.gpu[executor];
  return cores_[p.shard]->SetExecutorUp(p.local, up);
}

}  // namespace tutti
