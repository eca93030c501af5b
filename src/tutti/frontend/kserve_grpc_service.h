// KserveGrpcService: the KServe v2 / Open Inference Protocol over gRPC
// (`inference.GRPCInferenceService`, proto/grpc_predict_v2.proto) over an
// InferenceFrontend — the same models, readiness, checks and statistics as
// the HTTP routes.
//
//   ServerLive, ServerReady, ModelReady    health (ready follows the frontend)
//   ServerMetadata, ModelMetadata          metadata (NOT_FOUND: unknown model/version);
//                                          Tutti: the name "task:T" gives task T's
//                                          first variant's (model-less requests)
//   ModelInfer                             inference
//   ModelStreamInfer                       inference over one stream: a response per
//                                          request, as it is answered (errors in its
//                                          error_message); a sequence's requests run
//                                          in the order they were sent
//   ModelConfig                            Triton's model configuration (metadata access)
//   ModelStatistics                        Triton's statistics extension (admin; every
//                                          model when the name is empty)
//   RepositoryIndex, RepositoryModelLoad,  Triton's model repository extension
//   RepositoryModelUnload                  (admin; see InferenceFrontend's model control)
//
// Access (access.h) as on HTTP, from the `authorization` metadata:
// UNAUTHENTICATED without a valid token, PERMISSION_DENIED for an admin
// call with an inference token; health calls are open.
//
// ModelInfer takes each input either in the typed contents field of its
// datatype (`fp32_contents`, `int64_contents`, …; FP16 has none) or, for
// all inputs at once, as raw little-endian bytes in `raw_input_contents`,
// with the "latency_objective_ms" request parameter (double or int64) as on
// HTTP. The answer carries the outputs asked for (all by default) as raw
// bytes in `raw_output_contents` (as Triton does) and Tutti's markers as response parameters: "reconstructed",
// "tutti_emulated", "tutti_late", "tutti_batch_size", "tutti_queue_us",
// "tutti_compute_us", "tutti_server_us" (receipt to answer, on the server).
// Errors are gRPC codes: INVALID_ARGUMENT (bad request, or bytes that are
// not a ModelInferRequest), RESOURCE_EXHAUSTED (the model's queue is full),
// NOT_FOUND (unknown model or version), DEADLINE_EXCEEDED (the objective
// cannot be met), UNAVAILABLE (shutting down; retry elsewhere), INTERNAL or
// the executor's code for execution failures.
#ifndef TUTTI_FRONTEND_KSERVE_GRPC_SERVICE_H_
#define TUTTI_FRONTEND_KSERVE_GRPC_SERVICE_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/cancel_flag.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/proto/grpc_predict_v2.grpc.pb.h"

namespace tutti {

// ModelInfer is served raw (its request bytes parsed here), so that a
// request that is not a ModelInferRequest gets INVALID_ARGUMENT saying so.
class KserveGrpcService final
    : public inference::GRPCInferenceService::WithRawCallbackMethod_ModelInfer<
          inference::GRPCInferenceService::CallbackService> {
 public:
  // `frontend` must outlive this.
  explicit KserveGrpcService(InferenceFrontend* frontend) : frontend_(frontend) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                const inference::RepositoryModelLoadRequest* request,
                                                inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* context,
                                                  const inference::RepositoryModelUnloadRequest* request,
                                                  inference::RepositoryModelUnloadResponse* response) override;

  // The answer to one inference request: its status, the response when OK
  // (the model's name and the request's id either way), and what to report
  // once it is written.
  using InferAnswer =
      std::function<void(const absl::Status&, inference::ModelInferResponse, AnswerReceipt)>;
  // Runs one request, ModelInfer's or ModelStreamInfer's; `done` is called
  // exactly once, possibly before this returns. `cancel`, when given, is
  // set once the client has given up on the call; `traceparent` is the
  // call's (its `traceparent` metadata).
  void RunInfer(const inference::ModelInferRequest& request, InferAnswer done,
                std::shared_ptr<CancelFlag> cancel = nullptr,
                std::optional<TraceContext> traceparent = std::nullopt);

 private:
  // Whether the call may run (InferenceFrontend::Authorize on its
  // `authorization` metadata).
  absl::Status Authorize(grpc::CallbackServerContext* context, Api api) const;

  InferenceFrontend* const frontend_;
};

// The protobuf codec, exposed for tests and clients. ParseModelInfer checks
// `request` against `config` exactly as ParseInferRequest does for JSON
// (InvalidArgument naming the problem).
absl::StatusOr<InferRequest> ParseModelInfer(const inference::ModelInferRequest& request, const ModelConfig& config);
// WriteModelInfer answers with the outputs `answer` asks for (all by
// default).
void WriteModelInfer(const InferenceFrontend::ServedModel& served, const std::string& id,
                     const InferenceFrontend::InferResult& result, inference::ModelInferResponse* response,
                     const AnswerLayout& answer = {});

}  // namespace tutti

#endif  // TUTTI_FRONTEND_KSERVE_GRPC_SERVICE_H_
