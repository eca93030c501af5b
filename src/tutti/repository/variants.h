// Generated variants (INFaaS §3.2): one registered model runs as several
// variants that trade latency, throughput and cost — here, one per kind of
// hardware it can run on. A variant on the CPU is the model as profiled by
// `tutti profile`/`tutti train` (its `cpu` profile); a variant on an
// emulated accelerator gets that profile scaled by the accelerator's
// speed-ups over the CPU, so that every registered model gets every kind
// without a second measurement. Pure functions.
//
// The built-in kinds follow INFaaS Table 2's three variants of one model:
// A on 4 CPUs (200 ms at batch 1, 5 r/s at saturation, cost 1), B on
// Inferentia (20 ms, 100 r/s, cost 3), C on a V100 (15 ms, 800 r/s, cost
// 16): an accelerator runs batch 1 `latency_speedup` times faster than the
// CPU (10 and 13.3) and every further item of a batch `throughput_speedup`
// times faster (20 and 160), at `cost` times the CPU's cost per second.
#ifndef TUTTI_REPOSITORY_VARIANTS_H_
#define TUTTI_REPOSITORY_VARIANTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/latency_profile.h"
#include "tutti/core/time.h"
#include "tutti/repository/model_config.h"
#include "tutti/repository/model_repository.h"

namespace tutti {

struct HardwareKind {
  std::string name;               // "cpu", "inf1", "v100"
  std::string executor;           // "torch" (runs the weights) or "emulated"
  double latency_speedup = 1;     // ℓ(1) = ℓ_cpu(1) / latency_speedup
  double throughput_speedup = 1;  // ℓ(b) − ℓ(1) = (ℓ_cpu(b) − ℓ_cpu(1)) / throughput_speedup
  double cost = 1;                // per instance and second, the CPU's = 1
  Duration provision = 0;         // to get an instance of it, before the model loads
};

// cpu, inf1 and v100 as described above. Provisioning delays are Tutti's
// assumptions (INFaaS gives none per variant): 0.5 s on the CPU, 1 s on
// inf1, 2 s on the V100.
std::vector<HardwareKind> BuiltinHardwareKinds();

struct ModelVariant {
  std::string name;      // "<model>@<kind>"
  std::string model;     // the registered model it is generated from
  std::string task;
  std::string hardware;  // HardwareKind::name
  std::string executor;  // HardwareKind::executor: what runs it
  double accuracy = 0;   // the model's, measured on its test set (every variant computes the same function)
  LatencyProfile profile;
  double cost = 0;
  // The kind's provisioning plus the model's measured loading (its
  // config's load_ms, from `tutti profile`; 0 when not measured).
  Duration load_latency = 0;
  int64_t memory_bytes = 0;  // its weights: 4 bytes per parameter (0: parameters unknown)
};

// ℓ on `kind` from the CPU profile, at the CPU profile's measured sizes.
absl::StatusOr<LatencyProfile> ScaleProfile(const LatencyProfile& cpu, const HardwareKind& kind);

// One variant of `model` per kind. InvalidArgument, naming the model, when
// it cannot have variants: no measured accuracy or `cpu` profile, stateful,
// a graph, or emulated (no weights to run).
absl::StatusOr<std::vector<ModelVariant>> GenerateVariants(const ModelConfig& model,
                                                           const std::vector<HardwareKind>& kinds);

// The variants of `task`: every stateless, non-graph model of `repo` whose
// task it is and that has an accuracy and a cpu profile, on every kind;
// ordered by model, then kind. NotFound when no model of the task can have
// variants.
absl::StatusOr<std::vector<ModelVariant>> GenerateTaskVariants(const ModelRepository& repo, const std::string& task,
                                                               const std::vector<HardwareKind>& kinds);

// `variant` as a model version a server can serve: its model's latest
// version renamed, with the variant's profile only (under the kind's name)
// and the same weights; a torch executor runs it, an emulated one times it.
// REQUIRES: `repo` holds variant.model.
ModelVersion VariantVersion(const ModelRepository& repo, const ModelVariant& variant);

}  // namespace tutti

#endif  // TUTTI_REPOSITORY_VARIANTS_H_
