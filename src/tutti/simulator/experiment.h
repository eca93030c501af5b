// Simulator experiments, read from YAML:
//
//   seed: 1
//   duration_s: 10          # arrivals stop here
//   warmup_s: 1             # not measured
//   gpus: 8
//   policy: adaptive        # `tutti sim run`; `policies: [...]` for compare;
//                           # suffixes: "+early" (deferred+early) forces early drop,
//                           # "+latency" / "+consolidate" the deferral (adaptive+consolidate);
//                           # for `loads`: "+lru" eviction, "+on_demand" / "+first_request" loads
//   drop: lazy              # lazy | early
//   deferral: auto          # adaptive: latency | consolidate; auto: consolidate with autoscale:
//   gpu_ms_price: 100       # adaptive: ms of latency a GPU-ms saved by waiting is worth
//   jitter: 0.0             # relative execution-time jitter
//   network_us: {ctrl: 0, data_per_request: 0, resp: 0}
//   frontrun_slack_ms: 0    # `deferred`: dispatch this much before frontrun
//   head_guard_share: 0     # `deferred`: a lone head ends this share of its objective early
//   inject:                 # delays the emulated cluster adds (config/delay_model_reader.h)
//     response_us: {lognormal: {median: 400, p999: 3000}}
//     response_per_batch: false   # true: one response delay per batch (a stalled answer path)
//   delay_model: {quantile: 0.999}   # the scheduler plans with measured delays, as `tutti serve`
//   timeout_delays_ms: [0.5, 1, 2, 4]   # `timeout` is reported at its best delay
//   early_drop_windows: [8, 12, 16]     # "+early" policies: at their best window
//   paper_goodput: {Symphony: 5264}     # printed beside the results
//   nexus_epoch_s: 10
//   graph: {objective_ms: 400, gamma: [10], split: dp}
//                           # queries through the models in order (SimGraph):
//                           # gamma per step after the first; the objective
//                           # split by Nexus's DP (dp, the default), evenly, or
//                           # as given ([360, 40]: ms per model); whole_gpus: true
//                           # runs the DP with each stage on whole GPUs of its own;
//                           # duty_cycle: true plans a stage's batch within half
//                           # its share, as Nexus's runtime needs (policy nexus)
//   memory: {gpu_gb: 32, load_gb_per_s: 12, load_overhead_ms: 0}
//                           # more models than memory: GPUs start empty and
//                           # the `loads` policy plans loads (models need weights_mb)
//   models:
//     - {name: ResNet50, alpha_ms: 1.053, beta_ms: 5.072, slo_ms: 25}
//     - {zoo: data/profiles/symphony_zoo_a100.csv}   # every model of a table
//   workload:
//     arrival: poisson      # constant | poisson | gamma | trace
//     rate: 5000            # total requests/s
//     gamma_shape: 0.5
//     zipf: 1.0             # or weights: [...]
//     phases: [{at_s: 5, rate: 8000}]
//     priorities: [0.5, 0.5]   # shares sent at priority 1 (highest), 2, …
//     trace: arrivals.csv   # time_ms,model_index
//
// Per-model optional keys: max_batch, max_queue_delay_ms, early_drop_window,
// weights_mb (with `memory`), copies (that many models alike, name#1 …);
// for zoo entries also slo_scale and names (a subset). Relative paths are
// resolved against the working directory, then the experiment's directory.
#ifndef TUTTI_SIMULATOR_EXPERIMENT_H_
#define TUTTI_SIMULATOR_EXPERIMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/simulator/simulator.h"

namespace tutti {

struct Experiment {
  SimConfig config;                      // config.policy: the `policy` key, else a one-entry `policies`
  std::vector<std::string> policies;     // the `policies` key, else every policy
  bool policy_given = false;             // the file had `policy` …
  bool policies_given = false;           // … and `policies`
  std::vector<Duration> timeout_delays;  // empty: each model's own delay
  std::vector<int> early_drop_windows;   // empty: each model's own window
  // Published goodputs to print beside Tutti's (`paper_goodput: {Symphony: 5264}`).
  std::vector<std::pair<std::string, double>> paper_goodput;
};

// Parses experiment YAML; `base_dir` resolves relative paths. Errors name
// the field.
//
// With `cluster` (`tutti sim --repo --config`: SimulatedCluster of the
// serve config, deployment/cluster_layout.h), the cluster, policy, scheduler
// options and delay model come from it: the YAML must not name `gpus` or
// `models`, and its other keys override the cluster's where given. Its
// `workload` may then be left out (Poisson arrivals, equal shares; the
// rate from `tutti sim --rate`).
absl::StatusOr<Experiment> ParseExperiment(const std::string& yaml_text, const std::string& base_dir,
                                           const SimConfig* cluster = nullptr);

// The keys of `e` that `tutti sim ACTION` (run, compare or goodput) would
// not read, each with why: run and goodput run one policy (`policy`, or a
// one-entry `policies`), compare runs every entry of `policies`.
std::vector<std::string> UnreadKeys(const Experiment& e, const std::string& action);

// Reads and parses a file; errors are prefixed with its path.
absl::StatusOr<Experiment> LoadExperiment(const std::string& path, const SimConfig* cluster = nullptr);

// `base` for a policy entry: its name, early drop for a "+early" suffix
// ("deferred+early") and the deferral for "+latency" or "+consolidate", as
// `policies` and `--policy` take it. An unknown suffix leaves the whole
// entry as the policy name, which CreateScheduler refuses by name.
SimConfig ConfigForPolicy(const SimConfig& base, const std::string& entry);

// The configs a policy entry of `policies` stands for, with their labels:
// one per timeout delay for "timeout", one per early-drop window for a
// "+early" policy, else just the entry. Compare reports each family's best.
std::vector<std::pair<std::string, SimConfig>> PolicyVariants(const Experiment& e,
                                                              const std::string& entry);

}  // namespace tutti

#endif  // TUTTI_SIMULATOR_EXPERIMENT_H_
