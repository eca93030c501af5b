#include "tutti/experiments/model_less.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/status_macros.h"
#include "tutti/deployment/server_config.h"

namespace tutti {
namespace {

// Slots per variant: its kind's pool (4 for a kind without one).
int Slots(const ModelLessSetup& setup, const ModelVariant& v) {
  const auto it = setup.pools.find(v.hardware);
  return it == setup.pools.end() ? 4 : it->second;
}

}  // namespace

std::vector<RatePhase> ModelLessTrace(const ModelLessSetup& setup) {
  // A level in [0, 1] per second: 0 for the first sixth, rising evenly to 1
  // by 5/12, 1 until 7/12, falling evenly to 0 by 5/6, 0 to the end; the
  // rate is geometric between base (0) and peak (1).
  std::vector<RatePhase> phases;
  const double d = ToSeconds(setup.duration);
  for (int t = 0; t < d; ++t) {
    const double f = (t + 0.5) / d;
    const double level = std::clamp(std::min((f - 1.0 / 6) / (5.0 / 12 - 1.0 / 6), (5.0 / 6 - f) / (5.0 / 6 - 7.0 / 12)),
                                    0.0, 1.0);
    phases.push_back({t * kSecond, setup.base_rps * std::pow(setup.peak_rps / setup.base_rps, level)});
  }
  return phases;
}

absl::StatusOr<std::vector<ModelLessRun>> RunModelLessExperiment(const std::vector<ModelVariant>& variants,
                                                                 const ModelLessSetup& setup, std::ostream* progress) {
  if (variants.empty()) return absl::InvalidArgumentError("no variants");
  SimConfig base;
  base.policy = setup.policy;
  base.duration = setup.duration;
  base.seed = setup.seed;
  base.series_interval = setup.series_interval;
  const std::vector<RatePhase> trace = ModelLessTrace(setup);
  base.workload.arrival = ArrivalKind::kPoisson;
  base.workload.rate = trace.front().rate;
  base.workload.phases.assign(trace.begin() + 1, trace.end());
  SimModelLess ml;
  ml.task = {setup.min_accuracy, setup.objective, 0};
  ml.autoscale.slack = setup.slack;
  ml.autoscale.pools = setup.pools;
  for (const ModelVariant& v : variants) {
    base.cluster.sub_clusters.push_back({{static_cast<ModelId>(base.cluster.models.size())}, Slots(setup, v)});
    base.cluster.models.push_back({v.name, v.profile, setup.objective});
    ml.variants.push_back(ToTaskVariant(v, setup.objective));
  }

  // The fixed baselines' variants: each on the cheapest hardware whose pool
  // carries the peak (with the slack), else the one that carries most.
  const auto peak_cost = [&](int j) {
    const ModelVariant& v = variants[j];
    const double sat = ml.variants[j].saturation_qps;
    if (sat <= 0 || v.profile.Latency(1) > setup.objective) return std::numeric_limits<double>::infinity();
    const double need = std::ceil(setup.slack * setup.peak_rps / sat);
    return need <= Slots(setup, v) ? need * v.cost : 1e12 / (sat * Slots(setup, v));  // too small: by capacity
  };
  const auto cheapest_of = [&](auto keep) {
    int best = -1;
    for (int j = 0; j < static_cast<int>(variants.size()); ++j) {
      if (variants[j].accuracy < setup.min_accuracy || !keep(j)) continue;
      if (best < 0 || peak_cost(j) < peak_cost(best)) best = j;
    }
    return best;
  };
  double top = 0;
  for (const ModelVariant& v : variants) top = std::max(top, v.accuracy);
  const int accurate = cheapest_of([&](int j) { return variants[j].accuracy == top; });
  const int cheapest = cheapest_of([](int) { return true; });
  int per_instance = -1;
  for (int j = 0; j < static_cast<int>(variants.size()); ++j) {
    if (variants[j].accuracy < setup.min_accuracy || variants[j].profile.Latency(1) > setup.objective) continue;
    if (per_instance < 0 || variants[j].cost < variants[per_instance].cost ||
        (variants[j].cost == variants[per_instance].cost &&
         ml.variants[j].saturation_qps > ml.variants[per_instance].saturation_qps)) {
      per_instance = j;
    }
  }
  if (accurate < 0 || cheapest < 0 || per_instance < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "no variant of task '%s' meets accuracy >= %.4g within %.4g ms", setup.task, setup.min_accuracy,
        ToMillis(setup.objective)));
  }

  struct Mode {
    std::string label;
    bool ilp;
    int only;  // -1: every variant
  };
  const std::vector<Mode> modes = {
      {"tutti (ILP)", true, -1},
      {"tutti (greedy)", false, -1},
      {"fixed: most accurate", true, accurate},
      {"fixed: cheapest", true, cheapest},
      {"fixed: cheapest/instance", true, per_instance},
  };
  std::vector<ModelLessRun> runs;
  for (const Mode& mode : modes) {
    SimConfig config = base;
    SimModelLess m = ml;
    m.autoscale.ilp = mode.ilp;
    ModelLessRun run{mode.label, {}, {}};
    if (mode.only >= 0) {
      m.autoscale.allowed = {mode.only};
      run.allowed = {variants[mode.only].name};
    }
    config.model_less = std::move(m);
    if (progress) *progress << "model-less: " << mode.label << " …" << std::endl;
    TUTTI_ASSIGN_OR_RETURN(run.result, RunSimulation(config));
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace tutti
