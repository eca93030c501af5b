// ModelConfig: what Tutti knows about one version of a model, kept as
// `config.yaml` beside its weights (see model_repository.h for the layout).
//
// Example:
//   name: lenet5
//   platform: builtin            # builtin (Tutti's own architectures) | torchscript | emulated
//   architecture: lenet5         # builtin only: mlp | lenet5 | resnet_small
//   task: fashion-mnist          # application id: models of one task are interchangeable
//   max_batch_size: 256
//   inputs:
//     - {name: image, datatype: FP32, shape: [1, 28, 28]}   # shape without the batch dim
//   outputs:
//     - {name: logits, datatype: FP32, shape: [10]}
//   accuracy: 0.9012             # measured on a validation set (optional)
//   parameters: 61706            # trainable parameters (optional)
//   latency_objective_ms: 50     # default objective of its requests (optional)
//   dynamic_batching: {max_queue_delay_microseconds: 500}
//                                # the `timeout` policy's batching delay (Triton's
//                                # field; optional, default 1 ms)
//   parity: {deployed: mlp, k: 2, encoder: sum}   # only for ParM parity models (optional)
//   ensemble_scheduling:         # platform ensemble only: a graph of the repository's models
//     step:                      # (Triton's field names; see EnsembleStep)
//       - {model_name: coarse, model_version: -1, input_map: {image: image},
//          output_map: {logits: coarse_logits}}
//       - {model_name: shoes, input_map: {image: image}, output_map: {logits: logits},
//          route: {tensor: coarse_logits, argmax_in: [5, 7, 9]}}   # Tutti: runs only then
//     early_exit: {tensor: coarse_logits, argmax_in: [8]}        # Tutti: answer with it then
//     merge: mean                                                 # Tutti: several steps make the output
//   sequence_batching:           # a stateful model (Triton's field names; implicit state):
//     max_sequence_idle_microseconds: 1000000
//     state: [{input_name: hidden_in, output_name: hidden_out, data_type: TYPE_FP32, dims: [64]}]
//   model_state: {dims: [7850]}  # Tutti: compute-then-update — every batch updates the
//                                # model's own state (online learning); see ModelConfig
//   stage_hashes: [9f3c…, …]     # builtin only: per layer stage, written by tutti train
//   profiles:                    # latency profile per executor kind (optional)
//     cpu: {batch: [1, 2, 4], latency_us: [210.5, 260.1, 390.0], alpha_us: 60.1, beta_us: 150.2}
//
// Parsing rejects unknown fields (typos), wrong types and invalid values
// with messages that name the field. alpha_us/beta_us are written for people
// to read and recomputed from the points on load.
#ifndef TUTTI_REPOSITORY_MODEL_CONFIG_H_
#define TUTTI_REPOSITORY_MODEL_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/coding/parity_codec.h"
#include "tutti/core/data_type.h"
#include "tutti/core/latency_profile.h"

namespace tutti {

enum class Platform {
  kBuiltin,      // one of Tutti's C++ architectures; weights saved by Tutti
  kTorchScript,  // a TorchScript archive exported from PyTorch
  kOnnx,         // an ONNX model (Triton: onnxruntime_onnx), run on libtorch by the import
  kEmulated,     // no weights: runs only on emulated executors, from its profiles
  kEnsemble,     // no weights: a graph of other models (Triton's ensembles)
};

// Tutti's built-in architectures (src/tutti/models/architectures.h builds them).
inline constexpr absl::string_view kBuiltinArchitectures[] = {"mlp",      "lenet5",        "resnet_small",
                                                                "gru_rows", "online_linear", "calibrated_lenet5"};

struct TensorSpec {
  std::string name;
  DataType datatype = DataType::kFp32;
  // Per item, without the batch dimension; -1: a variable dimension (a
  // model with one lists its ModelConfig::shape_buckets).
  std::vector<int64_t> shape;
  // Triton's reshape.shape: the shape the model computes on, when it is
  // not the one clients send and receive (the same elements); empty: shape.
  std::vector<int64_t> reshape;
  // Triton's optional (inputs only): a request may leave it out, and the
  // model then receives zeros in its place (requests with and without it
  // batch together).
  bool optional = false;
  // A BYTES tensor's most bytes per element (Tutti's field): items travel
  // as fixed-size records, each element in a slot of this many bytes.
  int64_t max_element_bytes = 256;

  const std::vector<int64_t>& ModelShape() const { return reshape.empty() ? shape : reshape; }
  int64_t ElementCount() const;
  // Bytes of one element in a record: its datatype's size; a BYTES
  // element's slot: a 4-byte little-endian length, then max_element_bytes.
  int64_t ElementSize() const;
  bool operator==(const TensorSpec&) const = default;
};

// Marks a ParM parity model (coding/parity_codec.h): it was trained to
// output Σ F(X_i) of `deployed` for k queries X_i encoded with `encoder`.
// Its inputs and outputs are the deployed model's.
struct ParitySpec {
  std::string deployed;
  int k = 2;
  ParityEncoder encoder = ParityEncoder::kSum;

  bool operator==(const ParitySpec&) const = default;
};

// A condition on a graph tensor (KServe's Switch router, Triton's
// conditional ensembles): holds when the index of the tensor's largest
// value — the class a classifier chose — is one of `argmax_in`.
struct EnsembleRoute {
  std::string tensor;
  std::vector<int64_t> argmax_in;

  bool operator==(const EnsembleRoute&) const = default;
};

// One step of a graph (Triton's ensemble_scheduling.step): it runs
// `model_name` once every graph tensor its inputs map to exists. Each graph
// tensor has one producer — a graph input or a step output — and any number
// of consumers; the graph's outputs are step outputs. Tutti's extension:
// a step with a `route` runs only when the route holds (else it is skipped,
// and so is every step that reads its outputs), and several routed steps
// may produce the same tensor when their routes read one tensor and no
// class is in two of them (at most one runs: routing, then merging).
struct EnsembleStep {
  std::string model_name;
  int64_t model_version = -1;                     // -1: the latest, as Triton
  std::map<std::string, std::string> input_map;   // the step model's input → a graph tensor
  std::map<std::string, std::string> output_map;  // the step model's output → a graph tensor
  std::optional<EnsembleRoute> route;

  bool operator==(const EnsembleStep&) const = default;
};

// A stateful model (Triton's sequence_batching with implicit state): its
// requests belong to sequences (the sequence_id request parameter), and
// each sequence carries a state from one request to the next. The model
// itself is a function of (input, state) → (output, state′): its weights
// file computes on the concatenation [input…, state…] and returns
// [output…, state′…]; the state starts as zeros at sequence_start and is
// kept by the executor that runs the model (replication/), never sent by
// the client.
struct SequenceBatching {
  int64_t max_sequence_idle_us = 1'000'000;  // a sequence idle this long is forgotten
  std::string state_input = "state_in", state_output = "state_out";
  std::vector<int64_t> state_shape;  // per sequence, FP32

  int64_t StateElements() const;
  bool operator==(const SequenceBatching&) const = default;
};

// The most priority levels a model may have (dynamic_batching.priority_levels).
inline constexpr int64_t kMaxPriorityLevels = 16;

// Triton's ModelQueuePolicy: what the requests of one priority level may
// ask of the queue, and what becomes of a request still waiting for a
// batch when its timeout passes (timeout_action, below).
struct QueuePolicy {
  // timeout_action: REJECT withdraws a request not in a batch by its
  // timeout (answered Cancelled); DELAY (delay = true) sends it behind every
  // request of any level not past its own, still within its objective.
  bool delay = false;
  int64_t default_timeout_us = 0;       // default_timeout_microseconds; 0: none
  bool allow_timeout_override = false;  // a request's "timeout" parameter replaces it
  int64_t max_queue_size = 0;           // items of the level waiting or running; 0: no limit
  bool operator==(const QueuePolicy&) const = default;
};

struct ModelConfig {
  std::string name;
  Platform platform = Platform::kBuiltin;
  std::string architecture;  // kBuiltin only
  std::string task;
  int max_batch_size = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  // Tutti: for tensors with variable (-1) dimensions, the sizes a request's
  // variable dimensions are padded up to, ascending. Every variable
  // dimension of a request has one size (its length); the request is
  // padded with zeros to the smallest bucket that holds it, runs batched
  // with the requests of that bucket (profiled as "<kind>/<size>"), and
  // its variable outputs are cut back to its length.
  std::vector<int64_t> shape_buckets;
  std::optional<double> accuracy;
  std::optional<int64_t> parameters;
  std::optional<double> latency_objective_ms;
  // Tutti: how long loading its weights and running a first (largest)
  // batch took on this CPU, in ms, measured by `tutti profile`.
  std::optional<double> load_ms;
  std::optional<int64_t> max_queue_delay_us;  // dynamic_batching.max_queue_delay_microseconds
  // dynamic_batching.priority_levels and default_priority_level (Triton's):
  // requests name a level from 1 (served first) to priority_levels with
  // their "priority" parameter; 0 or none: the default. 0 levels: one.
  int64_t priority_levels = 0;
  int64_t default_priority_level = 0;
  // dynamic_batching.default_queue_policy and priority_queue_policy (by
  // level, 1 to priority_levels): a level without a policy of its own has
  // the default one; none: no limit, and a request's own timeout.
  std::optional<QueuePolicy> default_queue_policy;
  std::map<int64_t, QueuePolicy> priority_queue_policy;
  // The policy of requests at `level` (1-based, as priority_queue_policy's
  // keys); null: none.
  const QueuePolicy* QueuePolicyOf(int64_t level) const;
  std::map<std::string, LatencyProfile> profiles;  // executor kind → ℓ(b)
  std::optional<ParitySpec> parity;                // set for parity models only
  std::vector<EnsembleStep> steps;                 // platform ensemble only
  // Platform ensemble only (ensemble_scheduling.early_exit): when this
  // holds, the graph answers with the route's tensor as its output and runs
  // no further step.
  std::optional<EnsembleRoute> early_exit;
  // Platform ensemble only (ensemble_scheduling.merge, Tutti's extension;
  // KServe's Ensemble router): "" — each tensor has one producer (or
  // exclusive routed ones); "mean" or "sum" — the graph's output may be
  // made by several steps, which run side by side, and the answer is the
  // element-wise mean or sum of the outputs of those that ran.
  std::string merge;
  // Builtin only: per stage of the architecture, a hash of its weights
  // (models/architectures.h StageHashes), recorded by `tutti train`. Models
  // whose leading hashes agree share those layers (prefix batching).
  std::vector<std::string> stage_hashes;
  std::optional<SequenceBatching> sequence_batching;  // set for stateful models only
  // Tutti: a compute-then-update model (HAMS §II-B) — its state is the
  // model's own (its weights), read by every item of a batch and replaced
  // by the batch's update stage; the shape of that state. Empty: none.
  std::vector<int64_t> model_state_shape;
  int64_t ModelStateElements() const;
  // It keeps state between requests (either kind above).
  bool stateful() const { return sequence_batching.has_value() || !model_state_shape.empty(); }
};

// Whether any tensor has a variable (-1) dimension.
bool HasVariableDims(const ModelConfig& config);
// `tensors` at one shape bucket: every -1 dimension is `size`.
std::vector<TensorSpec> TensorsAt(std::vector<TensorSpec> tensors, int64_t size);
// `config` at one shape bucket: its tensors TensorsAt `size`, and no
// buckets.
ModelConfig AtBucket(const ModelConfig& config, int64_t size);
// The profile key of a bucket's ℓ(b) under executor kind `kind`: "cpu/16".
std::string BucketProfileKey(absl::string_view kind, int64_t size);

// The model as its weights compute: for a stateful model one input
// [input…, state…] and one output [output…, state′…] (flat); else `config`.
ModelConfig StatelessForm(const ModelConfig& config);

// A model as it is served: its config, at the version served.
struct ServedModel {
  ModelConfig config;
  int64_t version = 1;
  Duration latency = 0;  // its profiled ℓ(1) where it is served (a graph: its steps' summed); 0: unknown
  Duration objective = 0;  // its requests' default objective where it is served; 0: unknown
  // The most requests per second its executors answer within that
  // objective: Σ over them of b / ℓ(b) at the largest batch with ℓ(b) ≤
  // objective / 2 (Nexus's rule: a request may wait for one batch and run in
  // the next); a graph's, its slowest step's; 0: unknown.
  double peak_rps = 0;
  // An engine model no client calls (a prefix group, run for its members;
  // a shape bucket of a model of variable dimensions): not found by name
  // and not listed.
  bool internal = false;
  // A model of variable dimensions: the engine model that runs each of its
  // shape buckets, in config order (its own id last); empty otherwise.
  std::vector<int> buckets;
};

absl::string_view PlatformName(Platform platform);

// Parses and validates config.yaml text. Errors are InvalidArgument and name
// the field (and line/column for YAML syntax errors).
absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& yaml_text);

// Checks the rules ParseModelConfig enforces on values: a name, a known
// platform/architecture pairing, at least one input and output with unique
// names and positive dimensions, max_batch_size >= 1, accuracy in [0, 1],
// profiles no longer than max_batch_size.
absl::Status ValidateModelConfig(const ModelConfig& config);

// The YAML text ParseModelConfig reads back to an equal config.
std::string ModelConfigToYaml(const ModelConfig& config);

}  // namespace tutti

#endif  // TUTTI_REPOSITORY_MODEL_CONFIG_H_
