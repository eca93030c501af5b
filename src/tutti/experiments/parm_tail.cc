#include "tutti/experiments/parm_tail.h"

#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tutti/stages/parm_stage.h"
#include "tutti/core/histogram.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/models/evaluate.h"
#include "tutti/serving/inference_core.h"
#include "tutti/workload/workload.h"

namespace tutti {
namespace {

// Makes one instance: `parity` says whether it holds the parity model.
using InstanceFactory = std::function<absl::StatusOr<std::unique_ptr<Executor>>(bool parity)>;

struct Experiment {
  std::unique_ptr<InferenceCore> core;
  int instances = 0;
};

// The cluster of `setup`, every instance wrapped in its slowdown plan.
absl::StatusOr<Experiment> Build(const ParmTailSetup& setup, const LatencyProfile& profile,
                                 std::vector<int64_t> item_shape, int64_t output_elements,
                                 const InstanceFactory& make, Clock* clock) {
  const int extra = setup.redundancy == Redundancy::kNone ? 0 : setup.instances / setup.k;
  const bool parm = setup.redundancy == Redundancy::kParm;
  ClusterSpec spec;
  spec.models = {{"deployed", profile, setup.objective}};
  const int64_t input_elements = TensorSpec{"", DataType::kFp32, item_shape}.ElementCount();
  std::vector<ModelShape> shapes = {{input_elements, output_elements}};
  if (parm) {
    spec.models.push_back({"parity", profile, setup.objective});
    shapes.push_back(shapes[0]);
    spec.sub_clusters = {{{0}, setup.instances}, {{1}, extra}};
  } else {
    spec.gpus = setup.instances + extra;
  }
  const int total = setup.instances + extra;
  const Time end = clock->Now() + static_cast<Duration>(static_cast<double>(setup.requests) / setup.rate * 1e9) +
                   60 * kSecond;
  const auto plan = PlanSlowdowns(total, setup.slowdowns, clock->Now(), end);
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < total; ++g) {
    TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e, make(parm && g >= setup.instances));
    executors.push_back(std::make_unique<SlowdownExecutor>(clock, std::move(e), plan[g], setup.seed * 1000 + g));
  }
  InferenceCore::Options options;
  options.policy = "eager";
  options.scheduler.await_completion = true;
  if (parm) {
    TUTTI_ASSIGN_OR_RETURN(ParityCodec codec, ParityCodec::Create(ParityEncoder::kSum, setup.k, item_shape));
    TUTTI_ASSIGN_OR_RETURN(options.stages, MakeParmStages(spec, shapes, {{0, 1, std::move(codec), 0}}));
  }
  Experiment x;
  x.instances = total;
  TUTTI_ASSIGN_OR_RETURN(x.core, InferenceCore::Create(std::move(spec), std::move(shapes), std::move(executors),
                                                       options, clock));
  return x;
}

// Collects outcomes from any thread.
struct Collector {
  std::mutex mu;
  Histogram latency;
  int64_t errors = 0, reconstructed = 0, correct = 0, scored = 0;

  void Add(const InferenceOutcome& o, int label, int64_t classes) {
    std::lock_guard<std::mutex> lock(mu);
    if (!o.status.ok()) {
      ++errors;
      return;
    }
    latency.Record(o.finished - o.arrival);
    reconstructed += o.reconstructed;
    if (label >= 0) {
      correct += ArgmaxRows(o.output, classes)[0] == label;
      ++scored;
    }
  }
  ParmTailResult Result(const ParmTailSetup& setup, int instances) {
    ParmTailResult r;
    r.label = RedundancyLabel(setup.redundancy, setup.k);
    r.instances = instances;
    r.requests = latency.count() + errors;
    r.errors = errors;
    r.reconstructed = reconstructed;
    r.p50 = latency.Quantile(0.5);
    r.p99 = latency.Quantile(0.99);
    r.p999 = latency.Quantile(0.999);
    if (scored > 0) r.accuracy = static_cast<double>(correct) / static_cast<double>(scored);
    return r;
  }
};

std::unique_ptr<ArrivalSource> Arrivals(const ParmTailSetup& setup) {
  WorkloadSpec w;
  w.arrival = ArrivalKind::kPoisson;
  w.rate = setup.rate;
  return *MakeArrivalSource(w, 1, kInfiniteFuture, setup.seed);
}

}  // namespace

std::string RedundancyLabel(Redundancy redundancy, int k) {
  switch (redundancy) {
    case Redundancy::kNone:
      return "none";
    case Redundancy::kEqualResources:
      return absl::StrCat("equal-resources k=", k);
    case Redundancy::kParm:
      return absl::StrCat("parm k=", k);
  }
  return "";
}

ParmTailResult RunParmTailEmulated(const ParmTailSetup& setup, const LatencyProfile& profile) {
  ManualClock clock;
  constexpr int64_t kInput = 4, kOutput = 10;
  InstanceFactory make = [&](bool) -> absl::StatusOr<std::unique_ptr<Executor>> {
    return std::make_unique<EmulatedExecutor>(&clock, std::vector<EmulatedExecutor::Model>{{profile, kOutput}});
  };
  Experiment x = *Build(setup, profile, {kInput}, kOutput, make, &clock);
  Collector collector;
  std::unique_ptr<ArrivalSource> arrivals = Arrivals(setup);
  Arrival a;
  for (int64_t i = 0; i < setup.requests && arrivals->Next(&a); ++i) {
    clock.AdvanceTo(a.time);
    absl::Status s = x.core->Submit(0, std::vector<float>(kInput, 0.5f), 0,
                                    [&collector](InferenceOutcome o) { collector.Add(o, -1, kOutput); });
    if (!s.ok()) ++collector.errors;
  }
  while (x.core->in_flight() > 0 && clock.RunNextTimer()) {
  }
  return collector.Result(setup, x.instances);
}

absl::StatusOr<ParmTailResult> RunParmTailTorch(const ParmTailSetup& setup, const ModelVersion& deployed,
                                                const ModelVersion* parity, const ImageSet& test) {
  if (setup.redundancy == Redundancy::kParm && parity == nullptr) {
    return absl::InvalidArgumentError("the parm setup needs a parity model");
  }
  const ModelConfig& c = deployed.config;
  if (c.inputs.empty() || c.inputs[0].ElementCount() != test.image_size() || !c.profiles.contains("cpu")) {
    return absl::InvalidArgumentError(absl::StrCat("model '", c.name, "' must take ", test.image_size(),
                                                   "-pixel images and have a cpu profile (tutti profile)"));
  }
  RealClock clock;
  InstanceFactory make = [&](bool is_parity) -> absl::StatusOr<std::unique_ptr<Executor>> {
    std::vector<std::unique_ptr<TorchModel>> models;
    TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> m, TorchModel::Load(is_parity ? *parity : deployed));
    models.push_back(std::move(m));
    return std::make_unique<TorchExecutor>(&clock, std::move(models));
  };
  // Batch size one, as in the paper.
  const LatencyProfile one = *LatencyProfile::Linear(0, c.profiles.at("cpu").Latency(1), 1);
  const int64_t classes = c.outputs[0].ElementCount();
  TUTTI_ASSIGN_OR_RETURN(Experiment x, Build(setup, one, c.inputs[0].shape, classes, make, &clock));
  Collector collector;
  std::unique_ptr<ArrivalSource> arrivals = Arrivals(setup);
  const Time start = clock.Now();
  Arrival a;
  for (int64_t i = 0; i < setup.requests && arrivals->Next(&a); ++i) {
    const Time at = start + a.time;
    if (const Time now = clock.Now(); at > now) std::this_thread::sleep_for(std::chrono::nanoseconds(at - now));
    const int64_t image = i % test.size();
    const int label = test.labels[image];
    absl::Status s = x.core->Submit(0, test.ToFloat(image, 1), 0, [&collector, label, classes](InferenceOutcome o) {
      collector.Add(o, label, classes);
    });
    if (!s.ok()) ++collector.errors;
  }
  x.core->WaitIdle();
  x.core.reset();
  return collector.Result(setup, x.instances);
}

}  // namespace tutti
