// The KServe v2 JSON codec on arbitrary bytes: requests (with and without
// the binary tensor extension's header length) for a model of one FP32
// input and for one of typed, variable tensors (answered too), and
// responses (as the load generator reads them).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/repository/tensor_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the Inference-Header-Content-Length: none, or a
  // share of the rest (values past the end included).
  const uint8_t selector = data[0];
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<int64_t> json_length;
  if (selector & 1) json_length = static_cast<int64_t>(body.size() * (selector >> 1) / 100);
  (void)tutti::ParseInferRequest(body, tutti::fuzz::Model(), json_length);
  // A typed model's request; parsed, answered as its bucket's records of
  // zeros (its variable outputs cut back to the request's length).
  const tutti::ModelConfig& typed = tutti::fuzz::TypedModel();
  if (absl::StatusOr<tutti::InferRequest> r = tutti::ParseInferRequest(body, typed, json_length); r.ok()) {
    const int64_t words = tutti::RecordWords(tutti::TensorsAt(typed.outputs, r->answer.bucket_size));
    const std::vector<std::vector<float>> items(r->batch, std::vector<float>(words, 0.0f));
    (void)tutti::WriteInferResponse(typed, 1, r->id, items, "{}", (selector & 2) != 0, r->answer);
  }
  std::optional<size_t> response_length;
  if (json_length) response_length = static_cast<size_t>(*json_length);
  (void)tutti::ParseInferResponse(body, response_length);
  return 0;
}
