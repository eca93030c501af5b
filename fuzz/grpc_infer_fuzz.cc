// The KServe v2 gRPC ModelInfer request conversion on arbitrary bytes:
// protobuf parsing, then the same checks as HTTP's (ParseModelInfer), for a
// model of one FP32 input and for one of typed, variable tensors, whose
// parsed requests are answered too (WriteModelInfer: the cut to length).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "tutti/frontend/kserve_grpc_service.h"
#include "tutti/repository/tensor_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)tutti::ParseModelInfer(request, tutti::fuzz::Model());
  tutti::ServedModel typed;
  typed.config = tutti::fuzz::TypedModel();
  if (absl::StatusOr<tutti::InferRequest> r = tutti::ParseModelInfer(request, typed.config); r.ok()) {
    const int64_t words = tutti::RecordWords(tutti::TensorsAt(typed.config.outputs, r->answer.bucket_size));
    tutti::InferenceFrontend::InferResult result;
    result.outputs.assign(r->batch, std::vector<float>(words, 0.0f));
    inference::ModelInferResponse response;
    tutti::WriteModelInfer(typed, r->id, result, &response, r->answer);
  }
  return 0;
}
