// The KServe v2 JSON codec on arbitrary bytes: requests (with and without
// the binary tensor extension's header length) and responses (as the load
// generator reads them).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz/fuzz_util.h"
#include "tutti/codec/kserve_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the Inference-Header-Content-Length: none, or a
  // share of the rest (values past the end included).
  const uint8_t selector = data[0];
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<int64_t> json_length;
  if (selector & 1) json_length = static_cast<int64_t>(body.size() * (selector >> 1) / 100);
  (void)tutti::ParseInferRequest(body, tutti::fuzz::Model(), json_length);
  std::optional<size_t> response_length;
  if (json_length) response_length = static_cast<size_t>(*json_length);
  (void)tutti::ParseInferResponse(body, response_length);
  return 0;
}
