// HttpClientPool: keep-alive HTTP/1.1 connections to one server, for the
// load generator. Requests queue in FIFO order and go out on an idle
// connection, opening a new one while fewer than `max_connections` are
// open — so an open-loop generator never waits for a response before
// sending the next request, and a request's wait for a connection counts
// in its latency. One thread runs an epoll loop over non-blocking sockets:
// the client must cost less CPU than the server it measures on the same
// machine. It reads responses with a Content-Length (what KServe servers send).
//
// Thread-safety: Send() and RunAt() may be called from any thread;
// callbacks run on the pool's single I/O thread and must not block.
#ifndef TUTTI_LOADGEN_HTTP_CLIENT_POOL_H_
#define TUTTI_LOADGEN_HTTP_CLIENT_POOL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace tutti {

struct ClientResponse {
  absl::Status transport;    // not OK: no HTTP response (connection refused, reset, …)
  int status = 0;            // HTTP status
  std::string body;
  std::string json_length;   // Inference-Header-Content-Length, if any
  // When its last bytes reached this host: the kernel's receive timestamp
  // (SO_TIMESTAMPNS), on the steady clock; unset if the kernel gave none.
  // Unlike the moment the callback runs, it leaves out the client's own
  // wait for a core.
  std::optional<std::chrono::steady_clock::time_point> arrived;
};

struct ClientRequest {
  std::string method = "POST";
  std::string target;  // e.g. /v2/models/mlp/infer
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpClientPool {
 public:
  using Callback = std::function<void(ClientResponse)>;

  HttpClientPool(std::string host, int port, int max_connections);
  // Abandons queued requests (their callbacks are not called) and closes
  // every connection. Call after the last callback you wait for.
  ~HttpClientPool();

  // Sends `request`; `done` is called exactly once (unless the pool is
  // destroyed first). A request whose kept-alive connection turns out to
  // be closed by the server is retried once on a fresh connection.
  void Send(ClientRequest request, Callback done);
  // Send() and wait for the response. Blocks; never call it from a callback.
  ClientResponse Call(ClientRequest request);

  // Opens connections until `n` (at most `max_connections`) are open, and
  // waits for them: a generator that starts at a high rate then does not
  // open hundreds of connections while its first requests wait. Blocks;
  // never call it from a callback. Unavailable when the server cannot be
  // reached.
  absl::Status Preconnect(int n);

  // Runs `fn` on the I/O thread at `when` (steady clock). Sending from
  // there avoids waking the I/O thread once per request.
  void RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn);


 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tutti

#endif  // TUTTI_LOADGEN_HTTP_CLIENT_POOL_H_
