#include "tutti/frontend/access.h"

#include <openssl/crypto.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tutti/core/file_util.h"

namespace tutti {

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::vector<std::string> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.size() < 16 || absl::StrContains(line, ' ') || absl::StrContains(line, '\t')) {
      return absl::InvalidArgumentError(absl::StrCat("token file ", path, " line ", line_number,
                                                     ": a token is at least 16 characters, without spaces"));
    }
    tokens.emplace_back(line);
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat("token file ", path, " holds no token"));
  return tokens;
}

AccessPolicy::AccessPolicy(AccessOptions options) : options_(std::move(options)) {}

bool AccessPolicy::Holds(const std::vector<std::string>& tokens, absl::string_view token) {
  bool found = false;
  for (const std::string& t : tokens) {  // every one compared: the time does not tell which matched
    found |= t.size() == token.size() && CRYPTO_memcmp(t.data(), token.data(), t.size()) == 0;
  }
  return found;
}

absl::Status AccessPolicy::Check(Api api, absl::string_view authorization) const {
  if (api == Api::kHealth) return absl::OkStatus();
  const bool open = options_.inference_tokens.empty() && options_.admin_tokens.empty();
  if (open && api != Api::kShutdown) return absl::OkStatus();
  if (api == Api::kShutdown && options_.admin_tokens.empty()) {
    return absl::PermissionDeniedError("remote shutdown is off: the server has no admin tokens");
  }
  absl::string_view token = authorization;
  std::string basic;  // the password of HTTP Basic credentials (browsers)
  if (absl::ConsumePrefix(&token, "Basic ") || absl::ConsumePrefix(&token, "basic ")) {
    if (!absl::Base64Unescape(absl::StripAsciiWhitespace(token), &basic) || basic.find(':') == std::string::npos) {
      return absl::UnauthenticatedError("the Basic credentials are not base64 of 'user:token'");
    }
    token = absl::string_view(basic).substr(basic.find(':') + 1);
  } else if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
    return absl::UnauthenticatedError(authorization.empty() ? "this server needs a token: Authorization: Bearer <token>"
                                                            : "the Authorization header is not 'Bearer <token>'");
  }
  token = absl::StripAsciiWhitespace(token);
  const bool admin = Holds(options_.admin_tokens, token);
  const bool admin_only = api == Api::kShutdown || (api == Api::kAdmin && !options_.admin_tokens.empty());
  if (admin) return absl::OkStatus();
  if (!Holds(options_.inference_tokens, token)) return absl::UnauthenticatedError("unknown token");
  if (admin_only) return absl::PermissionDeniedError("this call needs an admin token; an inference token was given");
  return absl::OkStatus();
}

}  // namespace tutti
