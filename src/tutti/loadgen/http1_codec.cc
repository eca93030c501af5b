#include "tutti/loadgen/http1_codec.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tutti {

void AppendHttpRequest(absl::string_view method, absl::string_view target, absl::string_view host,
                       const std::vector<std::pair<std::string, std::string>>& headers, absl::string_view body,
                       std::string* out) {
  absl::StrAppend(out, method, " ", target, " HTTP/1.1\r\nHost: ", host, "\r\n");
  const bool typed = std::any_of(headers.begin(), headers.end(),
                                 [](const auto& h) { return absl::EqualsIgnoreCase(h.first, "Content-Type"); });
  if (!typed) absl::StrAppend(out, "Content-Type: application/json\r\n");
  for (const auto& [k, v] : headers) absl::StrAppend(out, k, ": ", v, "\r\n");
  absl::StrAppend(out, "Content-Length: ", body.size(), "\r\n\r\n", body);
}

absl::StatusOr<std::optional<ResponseHead>> ParseResponseHead(absl::string_view in) {
  const size_t end = in.find("\r\n\r\n");
  if (end == absl::string_view::npos || end + 4 > (64 << 10)) {
    if (in.size() > (64 << 10)) return absl::InvalidArgumentError("HTTP response head over 64 KiB");
    return std::optional<ResponseHead>();
  }
  ResponseHead head;
  head.head_length = end + 4;
  // "HTTP/1.1 200 OK", then one header per line; split lazily (a hot path).
  const absl::string_view text = in.substr(0, end);
  const absl::string_view status_line = text.substr(0, text.find("\r\n"));
  const absl::string_view version = status_line.substr(0, status_line.find(' '));
  const absl::string_view code = status_line.substr(std::min(status_line.size(), version.size() + 1), 3);
  if (!absl::StartsWith(version, "HTTP/1.") || !absl::SimpleAtoi(code, &head.status)) {
    return absl::InvalidArgumentError(absl::StrCat("bad HTTP status line '", status_line, "'"));
  }
  head.keep_alive = version == "HTTP/1.1";
  bool has_length = false;
  for (absl::string_view line : absl::StrSplit(text.substr(status_line.size()), "\r\n", absl::SkipEmpty())) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      has_length = absl::SimpleAtoi(value, &head.body_length);
    } else if (absl::EqualsIgnoreCase(name, "Inference-Header-Content-Length")) {
      head.json_length = std::string(value);
    } else if (absl::EqualsIgnoreCase(name, "Connection")) {
      if (absl::EqualsIgnoreCase(value, "close")) head.keep_alive = false;
      if (absl::EqualsIgnoreCase(value, "keep-alive")) head.keep_alive = true;
    } else if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return absl::InvalidArgumentError("chunked HTTP responses are not supported by the load generator");
    }
  }
  if (!has_length) return absl::InvalidArgumentError("HTTP response without Content-Length");
  return std::optional<ResponseHead>(head);
}

}  // namespace tutti
