// Reads a serve config's model-less autoscaling (INFaaS; autoscale/
// task_autoscaler.h) from a YAML mapping:
//
//   model_less:
//     task: fashion-mnist       # required: the task whose variants are generated and scaled
//     accuracy: 0.9             # the application's least accuracy: the variants the ILP may run
//     objective_ms: 10          # its latency objective (default: default_objective_ms)
//     pools: {cpu: 2, inf1: 4, v100: 2}  # instances per hardware kind at most (each variant's
//                               # executors); kinds: cpu (torch), inf1, v100 (emulated)
//     interval_s: 1             # how often the ILP runs (INFaaS: every second)
//     slack: 1.05               # INFaaS's slack-threshold
//     solver: ilp               # ilp (CBC) | greedy (INFaaS's heuristic)
//     min_down_wait_s: 0        # floor of the scale-down wait (else a variant's load latency)
//     variants: [lenet5@inf1]   # only these variants serve and scale (a fixed-variant
//                               # baseline: one, scaled horizontally); default: all
//     hardware:                 # the kinds variants are generated on (default: cpu, inf1
//       - {name: cpu}           # and v100, repository/variants.h); each: name, executor
//       - {name: slow, executor: emulated, latency_speedup: 0.01, throughput_speedup: 0.01,
//          cost: 1, provision_s: 0.5}
//                               # (torch: runs the weights, at speed-ups 1; emulated),
//                               # speed-ups over the cpu profile (default 1), cost per
//                               # instance-second (default 1), provisioning (default 0)
#ifndef TUTTI_CONFIG_MODEL_LESS_READER_H_
#define TUTTI_CONFIG_MODEL_LESS_READER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/repository/variants.h"

namespace tutti {

struct ModelLessOptions {
  std::string task;
  double accuracy = 0;
  std::optional<Duration> objective;  // none: the config's default objective
  TaskAutoscaleOptions autoscale;     // its pools default to one instance per kind
  std::vector<std::string> variants;  // the only variants allowed (names); empty: all
  std::vector<HardwareKind> hardware;  // the kinds variants are generated on; empty: BuiltinHardwareKinds()
};

// The options at `node`. InvalidArgument naming `field` for a non-mapping,
// a missing task, an unknown field, a value out of range or an unknown solver.
absl::StatusOr<ModelLessOptions> ReadModelLessOptions(const YAML::Node& node, const std::string& field);

}  // namespace tutti

#endif  // TUTTI_CONFIG_MODEL_LESS_READER_H_
