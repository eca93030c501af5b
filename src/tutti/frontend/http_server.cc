#include "tutti/frontend/http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/thread_name.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/net/tls.h"

namespace tutti {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// What the server's sessions share with it.
struct Shared {
  std::atomic<int64_t> unanswered{0};  // requests handed to the handler, their responses not yet written
  std::atomic<int64_t> sessions{0};    // open connections
  std::atomic<bool> draining{false};   // shutting down: finish what has arrived, then close
};

class Draining {
 public:
  virtual ~Draining() = default;
  // Shutdown has begun: an idle connection closes now (on its thread).
  virtual void Drain() = 0;
};

// One connection, on one thread of the loop: plain TCP (Stream =
// beast::tcp_stream) or TLS (TlsStream), which first does its handshake.
//
// Draining (graceful shutdown): every request whose bytes have arrived is
// answered (by the handler, which refuses new work with 503 by then), a
// response is sent with "Connection: close" unless more request bytes are
// already waiting, and an idle connection is closed.
template <class Stream>
class Session final : public Draining, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(Stream stream, const HttpServerOptions& options, HttpHandler* handler, Shared* shared)
      : stream_(std::move(stream)), idle_(stream_.get_executor()), options_(options), handler_(handler),
        shared_(shared) {
    ++shared_->sessions;
  }
  ~Session() override { --shared_->sessions; }

  void Start() {
    auto self = this->shared_from_this();
    net::dispatch(stream_.get_executor(), [self] {
      if constexpr (kTls) {
        self->Lowest().expires_after(std::chrono::nanoseconds(self->options_.read_timeout));
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->Lowest().close();  // not TLS, or a certificate refused: nothing to answer
          self->Read();
        });
      } else {
        self->Read();
      }
    });
  }

  void Drain() override {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->streamed_) return self->EndStream();
      if ((self->reading_ || self->resume_read_) && !self->RequestBytesWaiting()) self->Close(/*both=*/true);
    });
  }

  // A streamed response's body (HttpResponse::stream), on this session.
  class BodyStream final : public HttpStream {
   public:
    explicit BodyStream(std::shared_ptr<Session> session) : session_(std::move(session)) {}
    bool Send(std::string data) override {
      if (session_->stream_closed_) return false;
      net::post(session_->stream_.get_executor(),
                [s = session_, data = std::move(data)]() mutable { s->Enqueue(std::move(data)); });
      return true;
    }
    void Close() override {
      net::post(session_->stream_.get_executor(), [s = session_] { s->EndStream(); });
    }

   private:
    const std::shared_ptr<Session> session_;
  };

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(options_.max_header_bytes);
    // buffer_ may hold the start of a pipelined request: it stays.
    Lowest().expires_after(std::chrono::nanoseconds(options_.read_timeout));
    reading_ = true;
    if (shared_->draining && !RequestBytesWaiting()) return Close(/*both=*/true);
    // A whole request already in buffer_ (read ahead) is taken at once.
    if (buffer_.size() > 0) {
      parser_->eager(true);
      beast::error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (ec != http::error::need_more && (ec || parser_->is_done())) return OnRead(ec, 0);
    }
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, this->shared_from_this()));
  }

  // Bytes of a next request have arrived (in the buffer or the socket).
  bool RequestBytesWaiting() {
    beast::error_code ec;
    return buffer_.size() > 0 || (parser_ && parser_->got_some()) || Lowest().socket().available(ec) > 0;
  }

  void OnRead(beast::error_code ec, size_t) {
    reading_ = false;
    if (ec == http::error::body_limit) {
      HttpResponse r{413, WriteError(absl::StrCat("request body exceeds the limit of ",
                                                  options_.max_body_bytes, " bytes"))};
      Write(std::move(r), /*keep_alive=*/false, 11);
      return;
    }
    if (ec == http::error::header_limit) {
      HttpResponse r{431, WriteError(absl::StrCat("request headers exceed the limit of ", options_.max_header_bytes,
                                                  " bytes"))};
      Write(std::move(r), /*keep_alive=*/false, 11);
      return;
    }
    if (ec == net::error::operation_aborted || !Lowest().socket().is_open()) return;  // closed while idle
    if (ec) {  // end of stream, timeout, reset, malformed HTTP: close quietly
      if (ec != http::error::end_of_stream && ec != beast::error::timeout && ec != net::error::connection_reset &&
          ec != net::error::eof && ec != net::ssl::error::stream_truncated) {
        HttpResponse r{400, WriteError(absl::StrCat("malformed HTTP request: ", ec.message()))};
        Write(std::move(r), false, 11);
        return;
      }
      Close(/*both=*/false);
      return;
    }
    http::request<http::string_body> req = parser_->release();
    parser_.reset();  // RequestBytesWaiting() asks about the next request only
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.body = std::move(req.body());
    for (const auto& field : req) request.headers.emplace_back(field.name_string(), field.value());
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    Lowest().expires_never();
    ++shared_->unanswered;
    if (!kTls && options_.cancel_on_disconnect) request.gone = gone_ = std::make_shared<CancelFlag>();
    handler_->Handle(std::move(request), [self = this->shared_from_this(), keep_alive, version](HttpResponse r) {
      net::post(self->stream_.get_executor(), [self, r = std::move(r), keep_alive, version]() mutable {
        self->Write(std::move(r), keep_alive, version, /*answers_handler=*/true);
      });
    });
    ReadAhead();
  }

  // While a request is handled, the socket is read on (no extra wake-up:
  // the read a next request needs anyway, begun sooner), so that a client
  // that closes its connection is noticed — its request's `gone` flag is
  // set — and what it sends next waits in buffer_. Plain TCP only: a TLS
  // stream takes one read at a time, and its shutdown reads.
  void ReadAhead() {
    if constexpr (!kTls) {
      // Not with a pipelined request in buffer_: it is read next, at once.
      if (read_ahead_ || streamed_ || !options_.cancel_on_disconnect || buffer_.size() > 0) return;
      read_ahead_ = true;
      stream_.async_read_some(buffer_.prepare(kReadAheadBytes),
                              [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                                self->OnReadAhead(ec, n);
                              });
    }
  }

  void OnReadAhead(beast::error_code ec, size_t n) {
    read_ahead_ = false;
    if (!ec) {
      buffer_.commit(n);
    } else if (ec != net::error::operation_aborted) {  // the client closed or reset the connection
      peer_gone_ = true;
      if (gone_) gone_->Cancel();
      if (streamed_) return EndStream(/*now=*/true);
    }
    if (!resume_read_) return;  // the request is still being answered
    resume_read_ = false;
    if (peer_gone_) return Close(/*both=*/true);
    Read();
  }

  // Closes the connection once it has idled read_timeout waiting for its
  // read ahead. One timer per connection, re-armed each read_timeout or at
  // the idle spell's end, rather than armed per request.
  void WatchIdle() {
    watching_idle_ = true;
    const auto timeout = std::chrono::nanoseconds(options_.read_timeout);
    const auto now = std::chrono::steady_clock::now();
    idle_.expires_at(resume_read_ && idle_since_ + timeout > now ? idle_since_ + timeout : now + timeout);
    idle_.async_wait([weak = this->weak_from_this(), timeout](beast::error_code e) {
      const std::shared_ptr<Session> self = weak.lock();
      if (e || self == nullptr) return;
      if (self->resume_read_ && std::chrono::steady_clock::now() - self->idle_since_ >= timeout) {
        return self->Close(/*both=*/true);
      }
      self->WatchIdle();
    });
  }

  void Write(HttpResponse r, bool keep_alive, unsigned version, bool answers_handler = false) {
    if (r.prepare) std::exchange(r.prepare, nullptr)(&r);
    if (r.stream) return StartStream(std::move(r), version, answers_handler);
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version);
    res->set(http::field::server, "tutti");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    // Draining: the connection stays only for a next request already here.
    if (shared_->draining && !RequestBytesWaiting()) keep_alive = false;
    res->keep_alive(keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    http::async_write(stream_, *res, [self = this->shared_from_this(), res, answers_handler](beast::error_code ec,
                                                                                             size_t) {
      if (answers_handler) --self->shared_->unanswered;
      self->gone_.reset();
      if (ec || !res->keep_alive() || self->peer_gone_) {
        self->Close(/*both=*/false);
        return;
      }
      if (!self->read_ahead_) return self->Read();
      // The next request comes through the read begun ahead; till then the
      // connection idles, for read_timeout at most.
      self->resume_read_ = true;
      self->idle_since_ = std::chrono::steady_clock::now();
      if (!self->watching_idle_) self->WatchIdle();
    });
    // The write has begun: a response of a few kilobytes is in the socket's
    // buffer by now (the completion handler runs only after the loop's other
    // ready handlers, e.g. the rest of a batch's answers).
    if (r.on_written) r.on_written();
  }

  // A streamed response: its head now, its body as it is sent.
  void StartStream(HttpResponse r, unsigned version, bool answers_handler) {
    std::string head = absl::StrCat("HTTP/1.", version == 10 ? 0 : 1, " ", r.status, " ",
                                    std::string(http::obsolete_reason(static_cast<http::status>(r.status))),
                                    "\r\nServer: tutti\r\nContent-Type: ", r.content_type,
                                    "\r\nConnection: close\r\n");
    for (const auto& [k, v] : r.headers) absl::StrAppend(&head, k, ": ", v, "\r\n");
    head += "\r\n";
    streamed_ = true;
    if (answers_handler) --shared_->unanswered;
    Enqueue(std::move(head));
    r.stream(std::make_shared<BodyStream>(this->shared_from_this()));
  }

  void Enqueue(std::string data) {
    if (stream_closed_) return;
    queued_bytes_ += data.size();
    if (queued_bytes_ > kMaxQueuedStreamBytes) return EndStream(/*now=*/true);  // a client too slow
    queue_.push_back(std::move(data));
    if (!stream_writing_) WriteQueued();
  }

  void WriteQueued() {
    stream_writing_ = true;
    net::async_write(stream_, net::buffer(queue_.front()), [self = this->shared_from_this()](beast::error_code ec,
                                                                                             size_t) {
      self->stream_writing_ = false;
      self->queued_bytes_ -= self->queue_.front().size();
      self->queue_.pop_front();
      if (ec) return self->EndStream(/*now=*/true);
      if (!self->queue_.empty()) return self->WriteQueued();
      if (self->stream_closed_) self->Close(/*both=*/true);
    });
  }

  // Closes a stream: once its queue is written, or `now` (its connection
  // at once; a write under way ends with an error).
  void EndStream(bool now = false) {
    stream_closed_ = true;
    if (now) {
      beast::error_code ec;
      Lowest().socket().close(ec);
      if (!stream_writing_) queue_.clear(), queued_bytes_ = 0;
      return;
    }
    if (!stream_writing_ && queue_.empty()) Close(/*both=*/true);
  }

  // Ends the connection: its sending side (the client reads to the end of
  // what was written, then sees the close), or both (an idle connection).
  // TLS first says so (close_notify), waiting up to a second for the
  // client's.
  void Close(bool both) {
    resume_read_ = false;
    idle_.cancel();
    watching_idle_ = false;
    if constexpr (kTls) {
      if (closing_) return;
      closing_ = true;
      Lowest().expires_after(std::chrono::seconds(1));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) { self->Lowest().close(); });
    } else {
      beast::error_code ec;
      Lowest().socket().shutdown(both ? tcp::socket::shutdown_both : tcp::socket::shutdown_send, ec);
      if (both) Lowest().socket().close(ec);
      if (read_ahead_) Lowest().socket().cancel(ec);  // nothing more is read: the session may end
    }
  }

  Stream stream_;
  net::steady_timer idle_;  // a connection idle while its read ahead waits
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpServerOptions& options_;
  HttpHandler* handler_;
  Shared* const shared_;
  bool reading_ = false;  // waiting for a request
  // ReadAhead: the read under way, whether the response is out (the next
  // request is read once the read ahead ends), whether the client went
  // away, and the flag of the request being answered.
  static constexpr size_t kReadAheadBytes = 4096;
  bool read_ahead_ = false;
  bool resume_read_ = false;
  bool peer_gone_ = false;
  std::shared_ptr<CancelFlag> gone_;
  bool watching_idle_ = false;  // WatchIdle's timer is set
  std::chrono::steady_clock::time_point idle_since_;  // the last response's end, while resume_read_
  bool closing_ = false;  // TLS: shutting down
  // A streamed response (HttpResponse::stream): what waits to be written.
  static constexpr size_t kMaxQueuedStreamBytes = 1 << 20;
  bool streamed_ = false;
  std::atomic<bool> stream_closed_{false};
  bool stream_writing_ = false;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
};

// Refuses a connection over HttpServerOptions::max_connections: a 503 if
// the socket takes it at once, then the close.
void RefuseConnection(tcp::socket socket) {
  static const std::string kResponse = [] {
    const std::string body = WriteError("too many connections: retry later");
    return absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nServer: tutti\r\nContent-Type: application/json\r\n",
                        "Connection: close\r\nRetry-After: 1\r\nContent-Length: ", body.size(), "\r\n\r\n", body);
  }();
  beast::error_code ec;
  socket.non_blocking(true, ec);
  socket.write_some(net::buffer(kResponse), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

class BeastServer final : public HttpServer {
 public:
  BeastServer(const HttpServerOptions& options, HttpHandler* handler, EventLoop* loop)
      : options_(options),
        handler_(handler),
        own_loop_(loop ? nullptr : std::make_unique<EventLoop>(options.threads, "tutti-http")),
        loop_(loop ? loop : own_loop_.get()),
        acceptor_(loop_->context(0)),
        retry_(loop_->context(0)) {}

  ~BeastServer() override { Stop(); }

  absl::Status Listen() {
    if (options_.tls.enabled()) {
      absl::StatusOr<TlsPem> pem = ReadTlsFiles(options_.tls);
      if (!pem.ok()) return pem.status();
      absl::StatusOr<std::shared_ptr<net::ssl::context>> tls = ServerTlsContext(*pem);
      if (!tls.ok()) return tls.status();
      tls_ = *std::move(tls);
    }
    beast::error_code ec;
    const net::ip::address address = net::ip::make_address(options_.address, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("bad listen address '", options_.address, "'"));
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.address, ":",
                                                 options_.port, ": ", ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    net::post(acceptor_.get_executor(), [this] { Accept(); });
    return absl::OkStatus();
  }

  int port() const override { return port_; }

  void StopAccepting() override {
    shared_.draining = true;
    net::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
    });
  }

  bool Drain(Duration timeout) override {
    shared_.draining = true;
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      for (const std::weak_ptr<Draining>& w : sessions_) {
        if (std::shared_ptr<Draining> s = w.lock()) s->Drain();
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout);
    while (shared_.unanswered > 0 || shared_.sessions > 0) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    auto close = [this] {
      beast::error_code ec;
      acceptor_.close(ec);
      retry_.cancel();
    };
    if (loop_->context(0).stopped()) {
      close();
    } else {
      std::promise<void> closed;
      net::post(acceptor_.get_executor(), [&] {
        close();
        closed.set_value();
      });
      closed.get_future().wait();
    }
    if (own_loop_) own_loop_->Stop();
  }

 private:
  void Accept() {
    // A connection lives on one thread of the loop: its handlers need no strand.
    acceptor_.async_accept(loop_->NextContext(), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
        retry_.expires_after(std::chrono::milliseconds(10));
        retry_.async_wait([this](beast::error_code e) {
          if (!e && acceptor_.is_open()) Accept();
        });
        return;
      }
      if (shared_.sessions >= options_.max_connections) {
        RefuseConnection(std::move(socket));
      } else {
        socket.set_option(tcp::no_delay(true), ec);
        if (tls_) {
          Open(std::make_shared<Session<TlsStream>>(TlsStream(std::move(socket), *tls_), options_, handler_, &shared_));
        } else {
          Open(std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), options_, handler_,
                                                            &shared_));
        }
      }
      Accept();
    });
  }

  template <class S>
  void Open(std::shared_ptr<S> session) {
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      if (sessions_.size() > 2 * static_cast<size_t>(shared_.sessions) + 64) {  // amortized O(1)
        std::erase_if(sessions_, [](const std::weak_ptr<Draining>& w) { return w.expired(); });
      }
      sessions_.push_back(session);
    }
    session->Start();
  }

  const HttpServerOptions options_;
  HttpHandler* const handler_;
  const std::unique_ptr<EventLoop> own_loop_;  // null: serving on a shared loop
  EventLoop* const loop_;
  tcp::acceptor acceptor_;  // on the loop's thread 0; connections are spread over its threads
  net::steady_timer retry_;  // accepting again after a failed accept
  std::shared_ptr<net::ssl::context> tls_;  // null: plain HTTP
  Shared shared_;
  std::mutex sessions_mu_;
  std::vector<std::weak_ptr<Draining>> sessions_ ABSL_GUARDED_BY(sessions_mu_);
  std::atomic<bool> stopped_{false};
  int port_ = 0;
};

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (absl::EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler* handler,
                                                             EventLoop* loop) {
  auto server = std::make_unique<BeastServer>(options, handler, loop);
  if (absl::Status s = server->Listen(); !s.ok()) return s;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace tutti
