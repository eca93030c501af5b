// Tutti's wire: length-framed messages over stream sockets (TCP, or Unix
// domain sockets between processes of one host), on an EventLoop's
// io_context — no threads of its own, so a process whose timers and
// sockets share one loop thread handles a message without waking another
// thread.
//
// Framing: every frame is a 4-byte little-endian payload length, then the
// payload. A client's connection starts with one byte, its stream kind,
// which the listener hands to its owner with the connection.
//
// Addresses: "host:port" (an IPv4/IPv6 literal or "localhost") is TCP;
// "unix:/path" is a Unix domain socket.
//
// Security: with a PeerTls (net/tls.h), connections are mutual TLS — a
// peer without a certificate from the cluster's CA is refused in the
// handshake, before its first byte reaches the owner.
#ifndef TUTTI_NET_WIRE_H_
#define TUTTI_NET_WIRE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace tutti {

class PeerTls;

// Payloads above this are refused (the connection is closed).
inline constexpr size_t kMaxWireFrame = 256u << 20;

// The frames at the start of `data` (size bytes): calls `on_frame` with each
// whole frame's payload, in order, while it returns true and `stop` (if
// given) is not set. `consumed` says how many bytes the delivered frames
// took; `need` how many a frame cut short needs in all (0: none cut
// short); `bad` that a frame claims more than kMaxWireFrame or on_frame
// refused one. Pure: what the connection runs on its reads (and what the
// fuzzer runs).
struct FrameSplit {
  size_t consumed = 0;
  size_t need = 0;
  bool bad = false;
};
FrameSplit SplitFrames(const char* data, size_t size, const std::function<bool(const char*, size_t)>& on_frame,
                       const std::atomic<bool>* stop = nullptr);

// One connection carrying frames both ways.
//
// Thread-safety: Write() and Close() may be called from any thread; what
// they do runs on the connection's io_context. Handlers run there, one at
// a time. Lifetime: the connection lives while its io_context holds work
// for it or someone holds it; after on_close it holds no handlers.
class WireConnection : public std::enable_shared_from_this<WireConnection> {
 public:
  // Called per frame; false closes the connection (a payload it cannot use).
  using OnFrame = std::function<bool(const char* data, size_t size)>;
  using OnClose = std::function<void()>;

  // Connects to `address` (under `tls` unless null), sending `kind` first.
  // Returns at once; frames written before the connection is up wait for
  // it. A connection that fails (or fails its handshake) closes (on_close).
  // Errors: an address that cannot be parsed.
  static absl::StatusOr<std::shared_ptr<WireConnection>> Dial(boost::asio::io_context& io,
                                                               const std::string& address, uint8_t kind,
                                                               std::shared_ptr<PeerTls> tls = nullptr);
  ~WireConnection();

  // Starts delivering frames. Call once.
  void Start(OnFrame on_frame, OnClose on_close);
  // Queues a frame; `frame` holds 4 bytes (filled in here with the length)
  // followed by the payload. Frames leave in the order queued; what is
  // queued while a write is under way leaves together in the next one.
  void Write(std::string frame);
  // Closes the socket once the frames queued so far are written (or the
  // write fails); no more frames are delivered. on_close follows.
  void Close();

  boost::asio::io_context& context();

 private:
  friend class WireListener;
  class Socket;
  explicit WireConnection(std::unique_ptr<Socket> socket);
  void ReadSome();
  void OnRead(size_t n);
  void WriteQueued();
  void Shut();  // on the io thread

  std::shared_ptr<PeerTls> tls_;  // keeps the socket's TLS context alive (outlives socket_)
  std::unique_ptr<Socket> socket_;
  OnFrame on_frame_;
  OnClose on_close_;
  std::vector<char> in_;     // bytes read, not yet delivered: [0, in_end_)
  size_t in_end_ = 0;
  std::vector<std::string> queued_;   // frames waiting for the write under way
  std::vector<std::string> writing_;  // frames of the write under way
  bool connected_ = false;
  bool started_ = false;
  bool close_when_written_ = false;
  bool closed_ = false;
};

// Accepts connections on an address, reads each one's kind byte and hands
// it over. Thread-safety: Stop() may be called from any thread.
class WireListener {
 public:
  using OnAccept = std::function<void(uint8_t kind, std::shared_ptr<WireConnection> connection)>;
  // Binds `address` ("host:0" picks a free port; a Unix socket's old file
  // is removed) and accepts on `io`, under `tls` unless null. `on_accept`
  // runs on `io`'s thread. Errors: an address that cannot be parsed or bound.
  static absl::StatusOr<std::unique_ptr<WireListener>> Start(boost::asio::io_context& io, const std::string& address,
                                                            OnAccept on_accept, std::shared_ptr<PeerTls> tls = nullptr);
  ~WireListener();  // Stop()

  // The bound address, as peers reach it ("127.0.0.1:41234", "unix:/p").
  const std::string& address() const;
  // Stops accepting; connections already accepted live on. Idempotent.
  // REQUIRES: the io_context is running, or will not run again.
  void Stop();

 private:
  class Impl;
  explicit WireListener(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace tutti

#endif  // TUTTI_NET_WIRE_H_
