// Access control of the KServe frontends: bearer tokens, with a stricter set
// for administrative calls — in the spirit of Triton's restricted APIs
// (--http-restricted-api / --grpc-restricted-protocol), but with standard
// `Authorization: Bearer <token>` credentials on both protocols (gRPC:
// the `authorization` metadata). Browsers may give a token as the password
// of HTTP Basic credentials (`Authorization: Basic base64(user:token)`, any
// user name), which the console asks for.
//
//   health         always open (liveness and readiness probes)
//   metadata,      open when no tokens are configured; otherwise an
//   inference      inference or an admin token
//   admin          statistics, /metrics, the repository index, shutdown:
//                  an admin token when admin tokens are configured,
//                  otherwise as inference; shutdown only with an admin token
//
// Errors: Unauthenticated (no or unknown token: HTTP 401, gRPC
// UNAUTHENTICATED), PermissionDenied (an inference token on an admin call,
// or shutdown without admin tokens configured: 403 / PERMISSION_DENIED).
// Tokens are compared in constant time.
#ifndef TUTTI_FRONTEND_ACCESS_H_
#define TUTTI_FRONTEND_ACCESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tutti {

enum class Api { kHealth, kMetadata, kInference, kAdmin, kShutdown };

struct AccessOptions {
  std::vector<std::string> inference_tokens;
  std::vector<std::string> admin_tokens;
};

// Reads tokens from a file: one per line; blank lines and lines starting
// with '#' are skipped. InvalidArgument for a file without tokens or a token
// shorter than 16 characters or with spaces; NotFound for a missing file.
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

class AccessPolicy {
 public:
  explicit AccessPolicy(AccessOptions options);

  // Whether a call to `api` with this Authorization header value ("" when
  // absent) may run; the errors above otherwise.
  absl::Status Check(Api api, absl::string_view authorization) const;

 private:
  static bool Holds(const std::vector<std::string>& tokens, absl::string_view token);
  AccessOptions options_;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_ACCESS_H_
