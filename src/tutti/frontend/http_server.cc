#include "tutti/frontend/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/thread_name.h"
#include "tutti/frontend/kserve_json.h"

namespace tutti {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// What the server's sessions share with it.
struct Shared {
  std::atomic<int64_t> unanswered{0};  // requests handed to the handler, their responses not yet written
  std::atomic<int64_t> sessions{0};    // open connections
  std::atomic<bool> draining{false};   // shutting down: finish what has arrived, then close
};

// One connection, on one thread of the loop.
//
// Draining (graceful shutdown): every request whose bytes have arrived is
// answered (by the handler, which refuses new work with 503 by then), a
// response is sent with "Connection: close" unless more request bytes are
// already waiting, and an idle connection is closed.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options, HttpHandler* handler, Shared* shared)
      : stream_(std::move(socket)), options_(options), handler_(handler), shared_(shared) {
    ++shared_->sessions;
  }
  ~Session() { --shared_->sessions; }

  void Start() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::Read, shared_from_this()));
  }

  // Shutdown has begun: an idle connection closes now (on its thread).
  void Drain() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->reading_ && !self->RequestBytesWaiting()) self->Close(/*both=*/true);
    });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    // buffer_ may hold the start of a pipelined request: it stays.
    stream_.expires_after(std::chrono::nanoseconds(options_.read_timeout));
    reading_ = true;
    if (shared_->draining && !RequestBytesWaiting()) return Close(/*both=*/true);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  // Bytes of a next request have arrived (in the buffer or the socket).
  bool RequestBytesWaiting() {
    beast::error_code ec;
    return buffer_.size() > 0 || (parser_ && parser_->got_some()) || stream_.socket().available(ec) > 0;
  }

  void OnRead(beast::error_code ec, size_t) {
    reading_ = false;
    if (ec == http::error::body_limit) {
      HttpResponse r{413, WriteError(absl::StrCat("request body exceeds the limit of ",
                                                  options_.max_body_bytes, " bytes"))};
      Write(std::move(r), /*keep_alive=*/false, 11);
      return;
    }
    if (ec == net::error::operation_aborted || !stream_.socket().is_open()) return;  // closed while idle
    if (ec) {  // end of stream, timeout, reset, malformed HTTP: close quietly
      if (ec != http::error::end_of_stream && ec != beast::error::timeout && ec != net::error::connection_reset &&
          ec != net::error::eof) {
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
    stream_.expires_never();
    ++shared_->unanswered;
    handler_->Handle(std::move(request), [self = shared_from_this(), keep_alive, version](HttpResponse r) {
      net::post(self->stream_.get_executor(), [self, r = std::move(r), keep_alive, version]() mutable {
        self->Write(std::move(r), keep_alive, version, /*answers_handler=*/true);
      });
    });
  }

  void Write(HttpResponse r, bool keep_alive, unsigned version, bool answers_handler = false) {
    if (r.prepare) std::exchange(r.prepare, nullptr)(&r);
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version);
    res->set(http::field::server, "tutti");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    // Draining: the connection stays only for a next request already here.
    if (shared_->draining && !RequestBytesWaiting()) keep_alive = false;
    res->keep_alive(keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    http::async_write(stream_, *res, [self = shared_from_this(), res, answers_handler](beast::error_code ec, size_t) {
      if (answers_handler) --self->shared_->unanswered;
      if (ec || !res->keep_alive()) {
        self->Close(/*both=*/false);
        return;
      }
      self->Read();
    });
    // The write has begun: a response of a few kilobytes is in the socket's
    // buffer by now (the completion handler runs only after the loop's other
    // ready handlers, e.g. the rest of a batch's answers).
    if (r.on_written) r.on_written();
  }

  // Ends the connection: its sending side (the client reads to the end of
  // what was written, then sees the close), or both (an idle connection).
  void Close(bool both) {
    beast::error_code ec;
    stream_.socket().shutdown(both ? tcp::socket::shutdown_both : tcp::socket::shutdown_send, ec);
    if (both) stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpServerOptions& options_;
  HttpHandler* handler_;
  Shared* const shared_;
  bool reading_ = false;  // waiting for a request
};

class BeastServer final : public HttpServer {
 public:
  BeastServer(const HttpServerOptions& options, HttpHandler* handler, EventLoop* loop)
      : options_(options),
        handler_(handler),
        own_loop_(loop ? nullptr : std::make_unique<EventLoop>(options.threads, "tutti-http")),
        loop_(loop ? loop : own_loop_.get()),
        acceptor_(loop_->context(0)) {}

  ~BeastServer() override { Stop(); }

  absl::Status Listen() {
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
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (const std::weak_ptr<Session>& w : sessions_) {
      if (std::shared_ptr<Session> s = w.lock()) s->Drain();
    }
  }

  bool Drain(Duration timeout) override {
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
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        auto session = std::make_shared<Session>(std::move(socket), options_, handler_, &shared_);
        {
          std::lock_guard<std::mutex> lock(sessions_mu_);
          if (sessions_.size() > 2 * static_cast<size_t>(shared_.sessions) + 64) {  // amortized O(1)
            std::erase_if(sessions_, [](const std::weak_ptr<Session>& w) { return w.expired(); });
          }
          sessions_.push_back(session);
        }
        session->Start();
      }
      Accept();
    });
  }

  const HttpServerOptions options_;
  HttpHandler* const handler_;
  const std::unique_ptr<EventLoop> own_loop_;  // null: serving on a shared loop
  EventLoop* const loop_;
  tcp::acceptor acceptor_;  // on the loop's thread 0; connections are spread over its threads
  Shared shared_;
  std::mutex sessions_mu_;
  std::vector<std::weak_ptr<Session>> sessions_;  // GUARDED_BY(sessions_mu_)
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
