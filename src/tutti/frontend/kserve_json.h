// The KServe v2 / Open Inference Protocol JSON codec: parses and validates
// inference requests against a model's config, and writes responses,
// metadata and errors. No networking here, so every malformed-input case is
// testable directly.
//
// A request's input shapes include the batch dimension: [N, dims…] with
// 1 <= N <= max_batch_size; `data` is the row-major content, flat or nested.
// A request may carry the parameter "latency_objective_ms" (a positive
// number): its deadline, measured from receipt. Default: the model's.
#ifndef TUTTI_FRONTEND_KSERVE_JSON_H_
#define TUTTI_FRONTEND_KSERVE_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/repository/model_config.h"

namespace tutti {

struct InferRequest {
  std::string id;               // echoed in the response
  int batch = 0;                // N
  std::vector<float> data;      // N × input elements, FP32 (the model's one input)
  double objective_ms = 0;      // 0: the model's default
};

// InvalidArgument with a message naming the problem: malformed JSON, a
// missing or extra input, a wrong datatype, shape or element count, a batch
// above max_batch_size, non-numeric data, a bad parameter.
absl::StatusOr<InferRequest> ParseInferRequest(absl::string_view body, const ModelConfig& config);

// One item's result, for the response.
struct InferItem {
  std::vector<float> output;  // output elements
};

// {"model_name", "model_version", "id", "parameters", "outputs": [{name,
// datatype, shape [N, …], data}]}. `parameters` carries Tutti's markers
// (e.g. "tutti_emulated": true) as a JSON object text.
std::string WriteInferResponse(const ModelConfig& config, int64_t version, const std::string& id,
                               const std::vector<std::vector<float>>& outputs,
                               const std::string& parameters_json);

// {"name", "versions": [...], "platform", "inputs": [...], "outputs": [...]}
std::string WriteModelMetadata(const ModelConfig& config, const std::vector<int64_t>& versions);

// {"name": "tutti", "version", "extensions": [...]}
std::string WriteServerMetadata();

// {"error": message}, with the message JSON-escaped.
std::string WriteError(absl::string_view message);

}  // namespace tutti

#endif  // TUTTI_FRONTEND_KSERVE_JSON_H_
