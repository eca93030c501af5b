// The KServe v2 / Open Inference Protocol JSON codec: parses and validates
// inference requests against a model's config, and writes responses,
// metadata and errors. No networking here, so every malformed-input case is
// testable directly.
//
// A request's input shapes include the batch dimension: [N, dims…] with
// 1 <= N <= max_batch_size; `data` is the row-major content, flat or nested.
// A request may carry the parameter "latency_objective_ms" (a positive
// number): its deadline, measured from receipt. Default: the model's.
//
// The binary tensor extension: with an Inference-Header-Content-Length
// header, the body is that many bytes of JSON followed by raw tensor bytes;
// an input says "parameters": {"binary_data_size": n} instead of "data"
// (FP32, little-endian, row-major). Outputs come back binary when the
// request asks ("binary_data_output": true, or "binary_data": true on the
// output); the response then has the same layout.
//
// Limits: JSON nested deeper than kMaxJsonDepth is refused before parsing.
// Output values that are NaN or ±Inf are written NaN, Infinity and
// -Infinity, as Triton writes them; requests may use them too. Text from
// the request (its id) goes back as valid UTF-8 (core/user_text.h).
#ifndef TUTTI_CODEC_KSERVE_JSON_H_
#define TUTTI_CODEC_KSERVE_JSON_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "absl/strings/string_view.h"
#include "tutti/core/time.h"
#include "tutti/codec/infer_request.h"
#include "tutti/repository/model_config.h"

namespace tutti {

// InvalidArgument with a message naming the problem: malformed JSON, a
// missing or extra input, a wrong datatype, shape or element count, a batch
// above max_batch_size, non-numeric data, a bad parameter, binary data whose
// declared sizes do not add up. `json_length`: the value of the
// Inference-Header-Content-Length header, if the request has one.
absl::StatusOr<InferRequest> ParseInferRequest(absl::string_view body, const ModelConfig& config,
                                               std::optional<int64_t> json_length = std::nullopt);

// {"model_name", "model_version", "id", "parameters", "outputs": [{name,
// datatype, shape [N, …], data}]}. `parameters` carries Tutti's markers
// (e.g. "tutti_emulated": true) as a JSON object text. With
// `binary_output`, the data follows the JSON as raw FP32 bytes and
// json_length is set (the response's Inference-Header-Content-Length).
struct InferResponseBody {
  std::string body;
  std::optional<size_t> json_length;
};
InferResponseBody WriteInferResponse(const ModelConfig& config, int64_t version, const std::string& id,
                                     const std::vector<std::vector<float>>& outputs,
                                     const std::string& parameters_json, bool binary_output = false,
                                     const AnswerLayout& answer = {});

// The client side of the same protocol (the load generator, tests).

// A request's parameters, each left out at its default: due
// `objective_ms` after receipt (latency_objective_ms; 0: the model's
// default), Triton's `priority` (0: the model's default) and `timeout` (µs;
// 0: none).
struct InferParameters {
  double objective_ms = 0;
  uint64_t priority = 0;
  int64_t timeout_us = 0;
};

// A request for one FP32 input `name` of `shape` (batch dimension
// included) carrying `data`. With `binary`, the data and the answer travel
// as raw bytes; the body is then json_length bytes of JSON followed by the
// data.
struct EncodedInferRequest {
  std::string body;
  std::optional<size_t> json_length;  // the Inference-Header-Content-Length to send
};
// `min_accuracy` ≥ 0 adds the model-less parameter "accuracy" (a request to
// /v2/tasks/{task}/infer).
EncodedInferRequest WriteInferRequest(const std::string& name, const std::vector<int64_t>& shape,
                                      absl::Span<const float> data, const InferParameters& params, bool binary,
                                      double min_accuracy = -1);

// What a client reads from an inference response: the first output's values
// (JSON or binary), Tutti's emulated marker and how long Tutti held the
// request (tutti_server_us; absent from other servers). InvalidArgument for
// a body that is not a well-formed response.
struct InferResponse {
  std::string model_name;  // who answered (a model-less request: the variant)
  std::vector<float> output;
  bool emulated = false;
  std::optional<Duration> server_time;
};
absl::StatusOr<InferResponse> ParseInferResponse(absl::string_view body, std::optional<size_t> json_length);

// {"name", "versions": [...], "platform", "inputs": [...], "outputs": [...]}
std::string WriteModelMetadata(const ModelConfig& config, const std::vector<int64_t>& versions);

// Triton's model configuration (GET /v2/models/{m}/config; the JSON form of
// Triton's model_config.proto): name, platform, max_batch_size, input and
// output ({name, data_type: "TYPE_FP32", dims} without the batch
// dimension), dynamic_batching, sequence_batching (with its implicit
// state), ensemble_scheduling (steps with their input and output maps), and
// Tutti's own fields (task, objective, accuracy, profiled executor kinds,
// parity, routes) as string `parameters`.
std::string WriteModelConfig(const ModelConfig& config);

inline constexpr int kMaxJsonDepth = 64;

// {"name": "tutti", "version", "extensions": [...]}: the protocol
// extensions Tutti serves (binary_tensor_data, sequence, model_repository).
std::string WriteServerMetadata();

// Triton's model repository extension over HTTP.
struct RepositoryIndexEntry {
  std::string name;
  int64_t version = 1;
  std::string state;   // READY | UNLOADING | UNAVAILABLE
  std::string reason;  // "" when ready
};
// [{"name", "version", "state", "reason"?}, …] (POST /v2/repository/index).
std::string WriteRepositoryIndex(const std::vector<RepositoryIndexEntry>& models);
// The index request's body: empty, or {"ready": bool} (only ready models).
absl::StatusOr<bool> ParseRepositoryIndexRequest(absl::string_view body);
// A load or unload request's body: empty, or {"parameters": {…}}.
// `unload_dependents` (bool) is read; `config` and Triton's "file:…"
// overrides are refused (InvalidArgument): Tutti places a model's
// executors from the serve config at start, so a model is only loaded as
// it was configured.
struct RepositoryModelRequest {
  bool unload_dependents = false;
};
absl::StatusOr<RepositoryModelRequest> ParseRepositoryModelRequest(absl::string_view body);
// The InvalidArgument for a load or unload parameter other than
// unload_dependents (gRPC reads the parameters from its own map).
absl::Status RefuseRepositoryParameter(absl::string_view name);

// {"task", "variants": [{"name", "accuracy", "latency_ms"}, …]}: what
// GET /v2/tasks/{task} shows of the variants a model-less request chooses from.
struct TaskVariantEntry {
  std::string name;
  double accuracy = 0;
  double latency_ms = 0;
  std::string state;        // INFaaS's: active, overloaded, interfered
  double utilisation = 0;   // the requests it was given over its peak
  double peak_rps = 0;
};
std::string WriteTaskVariants(absl::string_view task, const std::vector<TaskVariantEntry>& variants);

// The members a model-less answer adds to its parameters (no braces):
// "tutti_task":…,"tutti_meets_requirements":…[,"tutti_variant_note":…],
std::string WriteTaskParameters(absl::string_view task, bool meets, absl::string_view note);

// {"error": message}, with the message JSON-escaped.
std::string WriteError(absl::string_view message);

}  // namespace tutti

#endif  // TUTTI_CODEC_KSERVE_JSON_H_
