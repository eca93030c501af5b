// The KServe v2 gRPC ModelInfer request conversion on arbitrary bytes:
// protobuf parsing, then the same checks as HTTP's (ParseModelInfer).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "tutti/frontend/kserve_grpc_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)tutti::ParseModelInfer(request, tutti::fuzz::Model());
  return 0;
}
