// GrpcServer: a gRPC listener for one or more services (the KServe v2
// inference service here; Tutti's internal RPCs in distributed mode).
#ifndef TUTTI_FRONTEND_GRPC_SERVER_H_
#define TUTTI_FRONTEND_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/net/tls.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace tutti {

struct GrpcServerOptions {
  std::string address = "127.0.0.1";
  int port = 8001;  // 0: any free port (see port()); -1: no gRPC listener
  int max_message_mb = 64;
  TlsOptions tls;  // cert set: TLS only (client_ca_file: clients must present a certificate)
};

class GrpcServer {
 public:
  // Binds and starts serving `services` (which must outlive the server).
  // Errors: the address cannot be bound; the TLS files are missing or wrong.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(const GrpcServerOptions& options,
                                                          const std::vector<grpc::Service*>& services);
  ~GrpcServer();  // Shutdown(0) if not done yet

  int port() const { return port_; }
  // Stops accepting RPCs, waits up to `grace` for those in progress, then
  // cancels the rest. Idempotent.
  void Shutdown(Duration grace);

 private:
  GrpcServer() = default;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_GRPC_SERVER_H_
