#include "tutti/frontend/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "tutti/grpc/grpc_util.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const GrpcServerOptions& options,
                                                              const std::vector<grpc::Service*>& services) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("gRPC port ", options.port, " is not in [0, 65535]"));
  }
  std::unique_ptr<GrpcServer> out(new GrpcServer());
  const std::string target = absl::StrCat(options.address, ":", options.port);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (options.tls.enabled()) {
    absl::StatusOr<TlsPem> pem = ReadTlsFiles(options.tls);
    if (!pem.ok()) return pem.status();
    grpc::SslServerCredentialsOptions ssl(pem->client_ca.empty()
                                              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = pem->client_ca;
    ssl.pem_key_cert_pairs.push_back({pem->private_key, pem->cert_chain});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(target, credentials, &out->port_);
  builder.SetMaxReceiveMessageSize(options.max_message_mb << 20);
  builder.SetMaxSendMessageSize(options.max_message_mb << 20);
  for (grpc::Service* s : services) builder.RegisterService(s);
  out->server_ = builder.BuildAndStart();
  if (!out->server_ || out->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", target, " (address in use?)"));
  }
  return out;
}

void GrpcServer::Shutdown(Duration grace) {
  if (!server_) return;
  server_->Shutdown(GrpcDeadline(grace));
  server_->Wait();
  server_.reset();
}

GrpcServer::~GrpcServer() { Shutdown(0); }

}  // namespace tutti
