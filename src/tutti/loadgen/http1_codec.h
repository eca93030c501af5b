// The HTTP/1.1 client codec of the load generator: the request it writes
// and the response heads it reads. Pure functions over bytes, so that the
// epoll loop (HttpClientPool) stays I/O only and the codec is tested alone.
#ifndef TUTTI_LOADGEN_HTTP1_CODEC_H_
#define TUTTI_LOADGEN_HTTP1_CODEC_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tutti {

// Appends one request to `out`: the request line, Host, Content-Type
// application/json (unless `headers` set another), `headers`, and
// Content-Length with the body.
void AppendHttpRequest(absl::string_view method, absl::string_view target, absl::string_view host,
                       const std::vector<std::pair<std::string, std::string>>& headers, absl::string_view body,
                       std::string* out);

// One parsed HTTP/1.x response head; `body_length` bytes of body follow it.
struct ResponseHead {
  int status = 0;
  size_t head_length = 0;  // through the blank line
  size_t body_length = 0;
  bool keep_alive = true;   // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive"
  std::string json_length;  // Inference-Header-Content-Length
};

// Parses the head at the start of `in`. nullopt while it is incomplete (up
// to 64 KiB); InvalidArgument for a bad status line, a head over 64 KiB, or
// what this client does not read (no Content-Length, chunked bodies).
absl::StatusOr<std::optional<ResponseHead>> ParseResponseHead(absl::string_view in);

}  // namespace tutti

#endif  // TUTTI_LOADGEN_HTTP1_CODEC_H_
