#include "tutti/net/wire.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tutti/net/tls.h"

namespace tutti {

namespace net = boost::asio;
using Proto = net::generic::stream_protocol;

namespace {

struct Endpoint {
  Proto::endpoint endpoint;
  bool tcp = true;
  std::string host;  // TCP: as given
  std::string path;  // Unix
};

absl::StatusOr<Endpoint> ParseAddress(const std::string& address) {
  Endpoint e;
  if (absl::StartsWith(address, "unix:")) {
    e.tcp = false;
    e.path = address.substr(5);
    if (e.path.empty() || e.path.size() >= sizeof(sockaddr_un::sun_path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", address, "': a Unix socket path must be 1 to ", sizeof(sockaddr_un::sun_path) - 1,
                       " characters"));
    }
    e.endpoint = Proto::endpoint(net::local::stream_protocol::endpoint(e.path));
    return e;
  }
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "' is not an address: expected host:port or "
                                                   "unix:/path"));
  }
  e.host = address.substr(0, colon);
  std::string host = e.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  const net::ip::address ip = net::ip::make_address(host, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "': '", e.host, "' is not an IP address"));
  }
  e.endpoint = Proto::endpoint(net::ip::tcp::endpoint(ip, static_cast<uint16_t>(port)));
  return e;
}

// TCP between hosts: no Nagle delay, and retransmissions backed off to at
// most 1 s (Linux's least allowed cap; its default is 120 s) instead of
// doubling past it: a link back from a partition carries the stream again
// within a second, not after the many seconds an uncapped backoff reaches,
// which no latency objective outlives. A kernel without the option keeps
// its default.
void SetTcpOptions(Proto::socket& socket) {
  boost::system::error_code ec;
  if (socket.local_endpoint(ec).protocol().family() == AF_UNIX) return;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  constexpr int kTcpRtoMaxMs = 44;  // TCP_RTO_MAX_MS (Linux 6.15), not yet in every libc's headers
  const int rto_max_ms = 1000;
  setsockopt(socket.native_handle(), IPPROTO_TCP, kTcpRtoMaxMs, &rto_max_ms, sizeof(rto_max_ms));
}

}  // namespace

// A connection's socket, plain or under TLS (PeerTls: the handshake comes
// first, then every byte goes through the TLS stream).
class WireConnection::Socket {
 public:
  Socket(net::io_context& io, net::ssl::context* tls) : io(io), socket(io) {
    if (tls) this->tls = std::make_unique<net::ssl::stream<Proto::socket&>>(socket, *tls);
  }
  template <typename Buffers, typename Handler>
  void ReadSome(const Buffers& buffers, Handler&& handler) {
    if (tls) return tls->async_read_some(buffers, std::forward<Handler>(handler));
    socket.async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <typename Buffers, typename Handler>
  void Read(const Buffers& buffers, Handler&& handler) {
    if (tls) return net::async_read(*tls, buffers, std::forward<Handler>(handler));
    net::async_read(socket, buffers, std::forward<Handler>(handler));
  }
  template <typename Buffers, typename Handler>
  void Write(const Buffers& buffers, Handler&& handler) {
    if (tls) return net::async_write(*tls, buffers, std::forward<Handler>(handler));
    net::async_write(socket, buffers, std::forward<Handler>(handler));
  }
  // Without TLS, `handler` runs at once.
  template <typename Handler>
  void Handshake(net::ssl::stream_base::handshake_type type, Handler&& handler) {
    if (tls) return tls->async_handshake(type, std::forward<Handler>(handler));
    handler(boost::system::error_code());
  }

  net::io_context& io;
  Proto::socket socket;
  std::unique_ptr<net::ssl::stream<Proto::socket&>> tls;  // null: plain
  std::atomic<bool> closing{false};
};

WireConnection::WireConnection(std::unique_ptr<Socket> socket) : socket_(std::move(socket)) {}
WireConnection::~WireConnection() = default;

net::io_context& WireConnection::context() { return socket_->io; }

absl::StatusOr<std::shared_ptr<WireConnection>> WireConnection::Dial(net::io_context& io, const std::string& address,
                                                                      uint8_t kind, std::shared_ptr<PeerTls> tls) {
  absl::StatusOr<Endpoint> e = ParseAddress(address);
  if (!e.ok()) return e.status();
  std::shared_ptr<WireConnection> c(
      new WireConnection(std::make_unique<Socket>(io, tls ? &tls->dialing() : nullptr)));
  c->tls_ = std::move(tls);
  c->queued_.push_back(std::string(1, static_cast<char>(kind)));
  net::dispatch(io, [c, endpoint = e->endpoint] {
    c->socket_->socket.async_connect(endpoint, [c](const boost::system::error_code& ec) {
      if (ec || c->closed_) return c->Shut();
      SetTcpOptions(c->socket_->socket);
      c->socket_->Handshake(net::ssl::stream_base::client, [c](const boost::system::error_code& ec) {
        if (ec || c->closed_) return c->Shut();  // e.g. a peer without the cluster's certificate
        c->connected_ = true;
        if (c->started_) c->ReadSome();
        if (c->writing_.empty() && !c->queued_.empty()) c->WriteQueued();
      });
    });
  });
  return c;
}

void WireConnection::Start(OnFrame on_frame, OnClose on_close) {
  net::dispatch(socket_->io, [self = shared_from_this(), on_frame = std::move(on_frame),
                              on_close = std::move(on_close)]() mutable {
    self->on_frame_ = std::move(on_frame);
    self->on_close_ = std::move(on_close);
    self->started_ = true;
    if (self->closed_) {
      self->closed_ = false;  // deliver on_close now
      return self->Shut();
    }
    if (self->connected_) self->ReadSome();
  });
}

void WireConnection::Write(std::string frame) {
  net::dispatch(socket_->io, [self = shared_from_this(), frame = std::move(frame)]() mutable {
    if (self->closed_) return;
    const uint32_t n = static_cast<uint32_t>(frame.size() - 4);
    const unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                  static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
    std::memcpy(frame.data(), len, 4);
    self->queued_.push_back(std::move(frame));
    if (self->connected_ && self->writing_.empty()) self->WriteQueued();
  });
}

void WireConnection::Close() {
  socket_->closing = true;
  net::post(socket_->io, [self = shared_from_this()] {
    self->close_when_written_ = true;
    // Not connected yet: the connection writes what is queued, then closes.
    if (self->writing_.empty() && self->queued_.empty()) self->Shut();
  });
}

void WireConnection::WriteQueued() {
  writing_.swap(queued_);
  std::vector<net::const_buffer> buffers;
  buffers.reserve(writing_.size());
  for (const std::string& f : writing_) buffers.emplace_back(f.data(), f.size());
  socket_->Write(buffers, [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
    self->writing_.clear();
    if (ec) return self->Shut();
    if (self->closed_) return;
    if (!self->queued_.empty()) return self->WriteQueued();
    if (self->close_when_written_) self->Shut();
  });
}

void WireConnection::ReadSome() {
  if (in_.size() - in_end_ < 16384) in_.resize(std::max(in_.size() * 2, in_end_ + 65536));
  socket_->ReadSome(net::buffer(in_.data() + in_end_, in_.size() - in_end_),
                    [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                      if (ec) return self->Shut();
                      self->OnRead(n);
                    });
}

FrameSplit SplitFrames(const char* data, size_t size, const std::function<bool(const char*, size_t)>& on_frame,
                       const std::atomic<bool>* stop) {
  FrameSplit out;
  while (size - out.consumed >= 4 && !(stop && *stop)) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data + out.consumed);
    const size_t n = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<size_t>(p[3]) << 24);
    if (n > kMaxWireFrame) {
      out.bad = true;
      return out;
    }
    if (size - out.consumed - 4 < n) {
      out.need = n + 4;
      return out;
    }
    if (!on_frame(data + out.consumed + 4, n)) {
      out.bad = true;
      return out;
    }
    out.consumed += 4 + n;
  }
  return out;
}

void WireConnection::OnRead(size_t n) {
  in_end_ += n;
  const FrameSplit split = SplitFrames(in_.data(), in_end_, on_frame_, &socket_->closing);
  if (split.bad) return Shut();
  if (closed_) return;
  std::memmove(in_.data(), in_.data() + split.consumed, in_end_ - split.consumed);
  in_end_ -= split.consumed;
  if (in_.size() < split.need) in_.resize(split.need + 65536);  // room for the whole frame
  ReadSome();
}

void WireConnection::Shut() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  socket_->socket.shutdown(net::socket_base::shutdown_both, ec);
  socket_->socket.close(ec);
  if (!started_) return;  // Start() delivers on_close
  OnClose done = std::move(on_close_);
  on_close_ = nullptr;
  on_frame_ = nullptr;
  if (done) done();
}

// ---- listener -------------------------------------------------------------------

class WireListener::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(net::io_context& io, OnAccept on_accept, std::shared_ptr<PeerTls> tls)
      : io_(io), acceptor_(io), on_accept_(std::move(on_accept)), tls_(std::move(tls)) {}

  absl::Status Bind(const Endpoint& e) {
    boost::system::error_code ec;
    if (!e.tcp) ::unlink(e.path.c_str());
    acceptor_.open(e.endpoint.protocol(), ec);
    if (!ec && e.tcp) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(e.endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("cannot listen on the internal address: ", ec.message()));
    if (!e.tcp) {
      address_ = "unix:" + e.path;
      path_ = e.path;
      return absl::OkStatus();
    }
    const Proto::endpoint bound = acceptor_.local_endpoint(ec);
    int port = 0;
    if (bound.protocol().family() == AF_INET6) {
      port = ntohs(reinterpret_cast<const sockaddr_in6*>(bound.data())->sin6_port);
    } else {
      port = ntohs(reinterpret_cast<const sockaddr_in*>(bound.data())->sin_port);
    }
    address_ = absl::StrCat(e.host, ":", port);
    return absl::OkStatus();
  }

  void Accept() {
    auto socket = std::make_unique<WireConnection::Socket>(io_, tls_ ? &tls_->accepting() : nullptr);
    Proto::socket& s = socket->socket;
    acceptor_.async_accept(s, [self = shared_from_this(), socket = std::move(socket)](
                                  const boost::system::error_code& ec) mutable {
      if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
      if (!ec) self->ReadKind(std::move(socket));
      self->Accept();
    });
  }

  void ReadKind(std::unique_ptr<WireConnection::Socket> socket) {
    SetTcpOptions(socket->socket);
    std::shared_ptr<WireConnection> c(new WireConnection(std::move(socket)));
    c->tls_ = tls_;
    c->connected_ = true;
    // A peer without the cluster's certificate fails the handshake: it is
    // never handed over.
    c->socket_->Handshake(net::ssl::stream_base::server, [self = shared_from_this(), c](
                                                             const boost::system::error_code& ec) {
      if (ec || !self->acceptor_.is_open()) return;
      auto kind = std::make_shared<uint8_t>(0);
      c->socket_->Read(net::buffer(kind.get(), 1), [self, c, kind](const boost::system::error_code& ec, size_t) {
        if (ec || !self->acceptor_.is_open()) return;
        self->on_accept_(*kind, c);
      });
    });
  }

  void Stop() {
    net::post(io_, [self = shared_from_this()] {
      boost::system::error_code ec;
      self->acceptor_.close(ec);
      if (!self->path_.empty()) ::unlink(self->path_.c_str());
    });
  }

  const std::string& address() const { return address_; }

 private:
  net::io_context& io_;
  net::basic_socket_acceptor<Proto> acceptor_;
  const OnAccept on_accept_;
  const std::shared_ptr<PeerTls> tls_;  // null: plain
  std::string address_;
  std::string path_;
};

absl::StatusOr<std::unique_ptr<WireListener>> WireListener::Start(net::io_context& io, const std::string& address,
                                                                  OnAccept on_accept, std::shared_ptr<PeerTls> tls) {
  absl::StatusOr<Endpoint> e = ParseAddress(address);
  if (!e.ok()) return e.status();
  auto impl = std::make_shared<Impl>(io, std::move(on_accept), std::move(tls));
  if (absl::Status s = impl->Bind(*e); !s.ok()) return s;
  net::dispatch(io, [impl] { impl->Accept(); });
  return std::unique_ptr<WireListener>(new WireListener(std::move(impl)));
}

WireListener::WireListener(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
WireListener::~WireListener() { Stop(); }
const std::string& WireListener::address() const { return impl_->address(); }
void WireListener::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace tutti
