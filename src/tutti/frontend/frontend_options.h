// FrontendOptions: everything a process's KServe frontend is set up with —
// its listeners, access control, admission control and remote shutdown.
// Kept apart from FrontendServer so that configs need no gRPC headers.
#ifndef TUTTI_FRONTEND_FRONTEND_OPTIONS_H_
#define TUTTI_FRONTEND_FRONTEND_OPTIONS_H_

#include "tutti/frontend/console_feed.h"
#include "tutti/frontend/grpc_server.h"
#include "tutti/frontend/http_server.h"
#include "tutti/frontend/inference_frontend.h"

namespace tutti {

struct FrontendOptions {
  HttpServerOptions http;
  GrpcServerOptions grpc;               // port -1: no gRPC listener
  InferenceFrontend::Options frontend;  // access, admission, remote shutdown
  ConsoleFeed::Options console;         // the live console's sampling
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_FRONTEND_OPTIONS_H_
