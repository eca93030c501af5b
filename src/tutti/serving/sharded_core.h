// ShardedCore: the in-process data plane on several cores. It splits the
// cluster into scheduler shards of whole sub-clusters (PlanShards,
// scheduler/shard_plan.h) and runs an InferenceCore per shard: each with
// its sub-clusters' executors, requests, scheduler and delay model under a
// lock of its own. A sub-cluster's models only ever meet its own GPUs, so
// shards share nothing, and requests of models in different shards are
// scheduled and dispatched on different cores at once instead of queueing
// for one lock. Each shard makes the decisions an InferenceCore over its
// sub-clusters alone would (sharded_core_test.cc).
//
// Callers use the cluster's global model and executor ids throughout;
// outcomes, counters and traces come back in them. With one shard it is
// the one InferenceCore, with nothing translated.
//
// Batch stages (ParM) submit internal requests to other models, which may
// sit in another shard: stages need one shard.
//
// Thread-safety: as InferenceCore; the shards' clock callbacks run under
// their own shard's lock only.
#ifndef TUTTI_SERVING_SHARDED_CORE_H_
#define TUTTI_SERVING_SHARDED_CORE_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tutti/scheduler/shard_plan.h"
#include "tutti/serving/inference_core.h"

namespace tutti {

class ShardedCore final : public InferenceEngine {
 public:
  // As InferenceCore::Create, over `shards` shards. Errors: those of
  // InferenceCore::Create, of PlanShards (more shards than sub-clusters),
  // or batch stages with more than one shard.
  static absl::StatusOr<std::unique_ptr<ShardedCore>> Create(ClusterSpec spec, std::vector<ModelShape> shapes,
                                                             std::vector<std::unique_ptr<Executor>> executors,
                                                             const InferenceCore::Options& options, Clock* clock,
                                                             int shards = 1);

  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                      InferenceCallback done) override;
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                          InferenceCallback done) override;
  void StopAccepting() override;
  void WaitIdle() override;
  int64_t in_flight() const override;
  int64_t WeightsLoads() const override;
  std::vector<ModelCounters> Counters() const override;
  std::vector<double> BusyFractions() const override;
  std::vector<Duration> BusyTimes() const override;
  std::vector<BatchTrace> RecentBatches(Time since) const override;
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override;
  // The shards' reports in one: histograms summed, each planned delay the
  // largest of the shards', compute figures and choices by global ids.
  DelayReport Delays() const override;

  // As InferenceCore::SetExecutorUp, by global executor id.
  absl::Status SetExecutorUp(GpuId executor, bool up);
  const ClusterSpec& spec() const { return spec_; }
  int shards() const { return static_cast<int>(cores_.size()); }

 private:
  ShardedCore(ClusterSpec spec, std::vector<ModelShape> shapes, Clock* clock)
      : spec_(std::move(spec)), shapes_(std::move(shapes)), clock_(clock) {}
  // A shard's outcome in global ids.
  void Globalize(int shard, InferenceOutcome& out) const;
  // The shards' per-executor figures, by global executor id.
  template <typename T>
  std::vector<T> ByExecutor(std::vector<T> (InferenceCore::*per_shard)() const) const;

  const ClusterSpec spec_;
  const std::vector<ModelShape> shapes_;
  Clock* const clock_;
  ShardPlan plan_;
  std::vector<std::unique_ptr<InferenceCore>> cores_;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_SHARDED_CORE_H_
