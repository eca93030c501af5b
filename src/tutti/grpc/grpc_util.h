// Small gRPC helpers shared by every Tutti gRPC service and client (KServe
// v2, etcd): status conversions — absl and gRPC use
// the same code numbers — deadlines, and finishing a unary callback RPC.
#ifndef TUTTI_GRPC_GRPC_UTIL_H_
#define TUTTI_GRPC_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "tutti/core/time.h"

namespace tutti {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// A gRPC deadline `from_now` ahead (gRPC deadlines are system-clock points;
// they bound RPCs, never scheduling).
inline std::chrono::system_clock::time_point GrpcDeadline(Duration from_now) {
  return std::chrono::system_clock::now() + std::chrono::nanoseconds(from_now);
}

// Ends a unary callback RPC with `status`; returns its reactor.
inline grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                             const absl::Status& status = absl::OkStatus()) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace tutti

#endif  // TUTTI_GRPC_GRPC_UTIL_H_
