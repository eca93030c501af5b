// HttpServer: a small asynchronous HTTP/1.1 server (Boost.Beast) with
// keep-alive, optional TLS (HTTPS, and client certificates), limits on
// connections, header and body sizes, and a read timeout so that slow or
// half-sent requests cannot hold a connection (or anyone else) up.
//
// Requests go to an HttpHandler, which answers through a callback — possibly
// later and from another thread. Each connection handles one request at a
// time (HTTP/1.1 without pipelining), so a slow request delays only its own
// connection.
#ifndef TUTTI_FRONTEND_HTTP_SERVER_H_
#define TUTTI_FRONTEND_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/cancel_flag.h"
#include "tutti/core/time.h"
#include "tutti/net/event_loop.h"
#include "tutti/net/tls.h"

namespace tutti {

struct HttpRequest {
  std::string method;  // "GET", "POST", …
  std::string target;  // path and query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Cancelled once the client closes its connection before the answer is
  // written (null: not watched, e.g. over TLS).
  std::shared_ptr<CancelFlag> gone;

  // The first header with this (case-insensitive) name, or "".
  std::string Header(const std::string& name) const;
};

// The open body of a streamed response (HttpResponse::stream), e.g.
// server-sent events. Thread-safe.
class HttpStream {
 public:
  virtual ~HttpStream() = default;
  // Queues `data` to be written after what was sent before. False, and
  // nothing sent, once the stream is closed: by Close(), by the client
  // (seen as a failed write), by a graceful shutdown of the server, or
  // because the client reads too slowly (over a megabyte waiting).
  virtual bool Send(std::string data) = 0;
  // Ends the response (and its connection) once what was sent is written.
  virtual void Close() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // Called on the connection's I/O thread just before the response is
  // written, to fill it in there (a handler answering from another thread
  // leaves the work of serializing to the connection's thread).
  std::function<void(HttpResponse*)> prepare;
  // Called on the connection's I/O thread once the response's write has
  // begun: what fits the socket's buffer (a response of a few kilobytes) is
  // in it. Called even if the write fails later.
  std::function<void()> on_written;
  // Set: a streamed response. Its status and headers are written with
  // "Connection: close" and no length; then the body is whatever is sent
  // through the HttpStream handed to this callback (on the connection's
  // thread), until either side closes it. `body` is ignored.
  std::function<void(std::shared_ptr<HttpStream>)> stream;
};

// Thread-safety: Handle() is called from the server's I/O threads,
// concurrently for different connections. `respond` must be called exactly
// once, from any thread.
class HttpHandler {
 public:
  using Respond = std::function<void(HttpResponse)>;
  virtual ~HttpHandler() = default;
  virtual void Handle(HttpRequest request, Respond respond) = 0;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  int port = 8000;                             // 0: any free port (see port())
  int threads = 2;                             // I/O threads (of the server's own loop)
  size_t max_body_bytes = 64 << 20;            // larger bodies get 413
  size_t max_header_bytes = 64 << 10;          // larger headers get 431
  Duration read_timeout = 10 * kSecond;        // to receive a whole request (and a TLS handshake);
                                               // also how long a kept-alive connection may idle
  int max_connections = 16384;                 // beyond: 503 and close at once
  // A client that closes its connection (or half-closes it) before its
  // answer withdraws its request (HttpRequest::gone). Plain HTTP only.
  bool cancel_on_disconnect = true;
  TlsOptions tls;                              // cert set: HTTPS only
};

class HttpServer {
 public:
  // Binds and starts serving on `loop` (which must outlive the server), or,
  // when null, on a loop of its own with options.threads threads. `handler`
  // must outlive the server. Errors: the address cannot be parsed or bound;
  // the TLS files are missing or wrong (ReadTlsFiles).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler* handler,
                                                          EventLoop* loop = nullptr);
  virtual ~HttpServer() = default;

  // The bound port.
  virtual int port() const = 0;
  // Stops accepting connections; open ones keep being served, each
  // response saying Connection: close unless the next request is already
  // there.
  virtual void StopAccepting() = 0;
  // Closes the idle connections (after StopAccepting), then waits until
  // every request handed to the handler so far has had its response
  // written, or `timeout` passes; returns whether it got there.
  virtual bool Drain(Duration timeout) = 0;
  // Closes the listener and, with a loop of its own, stops it (joining its
  // threads); responses not yet written are lost, so Drain() first. On a
  // shared loop, its owner stops the loop before destroying the handler.
  virtual void Stop() = 0;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_HTTP_SERVER_H_
