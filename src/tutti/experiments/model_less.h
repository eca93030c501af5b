// INFaaS's model-less experiment (INFaaS §6.2, Figure 6's fluctuating load)
// with the real demo models: queries name only a task and its requirements
// (accuracy, objective); the task's variants are generated from the
// registered models (repository/variants.h: every model on every hardware
// kind, its measured accuracy, its `cpu` profile as measured and scaled for
// the emulated accelerators); a load that rises and falls is simulated on
// emulated instances (the simulator's GPUs, in virtual time: deterministic)
// under the scheduler the server runs, and TaskAutoscaler picks variants
// and scales them. Compared with fixed-variant baselines that scale only
// horizontally (INFaaS's SM+): always the most accurate model, and always
// the cheapest variant that meets the accuracy — each on the cheapest
// hardware whose pool carries the load's peak — and, for reference, the
// cheapest variant per instance (which may not carry the peak).
#ifndef TUTTI_EXPERIMENTS_MODEL_LESS_H_
#define TUTTI_EXPERIMENTS_MODEL_LESS_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/repository/model_repository.h"
#include "tutti/repository/variants.h"
#include "tutti/simulator/simulator.h"

namespace tutti {

struct ModelLessSetup {
  std::string task = "fashion-mnist";
  double min_accuracy = 0.9;
  Duration objective = 10 * kMillisecond;
  // Instances per hardware kind at most (INFaaS's R_total).
  std::map<std::string, int> pools = {{"cpu", 2}, {"inf1", 4}, {"v100", 2}};
  // The load, Poisson, its rate changing every second: `base_rps` for the
  // first and last sixth of `duration`, `peak_rps` for the middle sixth,
  // rising and falling between (by the same factor every second).
  double base_rps = 2000;
  double peak_rps = 120000;
  Duration duration = 240 * kSecond;
  std::string policy = "adaptive";
  double slack = 1.05;
  uint64_t seed = 1;
  Duration series_interval = 0;  // > 0: each run's SimResult::series at this step
};

struct ModelLessRun {
  std::string label;
  std::vector<std::string> allowed;  // the variants it may use (empty: all)
  SimResult result;
};

// The load's rate phases (WorkloadSpec's), for printing and tests.
std::vector<RatePhase> ModelLessTrace(const ModelLessSetup& setup);

// Runs Tutti (the ILP, and INFaaS's greedy heuristic) and the three
// baselines. Errors: no variant of the task, none accurate enough, or the
// simulator's.
absl::StatusOr<std::vector<ModelLessRun>> RunModelLessExperiment(const std::vector<ModelVariant>& variants,
                                                                 const ModelLessSetup& setup, std::ostream* progress);

}  // namespace tutti

#endif  // TUTTI_EXPERIMENTS_MODEL_LESS_H_
