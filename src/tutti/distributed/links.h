// The streams of distributed Tutti's internal protocol
// (proto/tutti_internal.proto), as its nodes see them: typed links
// (net/stream.h), opened through a Connector and accepted from a listener.
// The nodes know nothing of sockets: WireConnector and ServeWire carry the
// streams over Tutti's wire (net/wire.h); tests connect nodes in memory.
//
//   stream     opened by   to           up (opener → acceptor)   down
//   frontend   frontend    scheduler    FrontendUp               FrontendDown
//   backend    backend     scheduler    BackendUp                BackendDown
//   feed       frontend    backend      FeedDown                 FeedUp
//   replica    primary     its backup   ReplicaDown              ReplicaUp
#ifndef TUTTI_DISTRIBUTED_LINKS_H_
#define TUTTI_DISTRIBUTED_LINKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/net/stream.h"
#include "tutti/proto/tutti_internal.pb.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace tutti {

class PeerTls;

using FrontendLink = Link<internal::FrontendUp>;        // a frontend's, to the scheduler
using FrontendPeer = Link<internal::FrontendDown>;      // the scheduler's, to a frontend
using BackendLink = Link<internal::BackendUp>;          // a backend's, to the scheduler
using BackendPeer = Link<internal::BackendDown>;        // the scheduler's, to a backend
using FeedLink = Link<internal::FeedDown>;              // a frontend's, to a backend
using FeedPeer = Link<internal::FeedUp>;                // a backend's, to a frontend
using ReplicaLink = Link<internal::ReplicaDown>;        // a primary backend's, to its backup
using ReplicaPeer = Link<internal::ReplicaUp>;          // a backup's, to its primary

using FrontendHandlers = StreamHandlers<internal::FrontendDown, internal::FrontendUp>;  // at the frontend
using FrontendPeerHandlers = StreamHandlers<internal::FrontendUp, internal::FrontendDown>;  // at the scheduler
using BackendHandlers = StreamHandlers<internal::BackendDown, internal::BackendUp>;
using BackendPeerHandlers = StreamHandlers<internal::BackendUp, internal::BackendDown>;
using FeedHandlers = StreamHandlers<internal::FeedUp, internal::FeedDown>;
using FeedPeerHandlers = StreamHandlers<internal::FeedDown, internal::FeedUp>;
using ReplicaHandlers = StreamHandlers<internal::ReplicaUp, internal::ReplicaDown>;
using ReplicaPeerHandlers = StreamHandlers<internal::ReplicaDown, internal::ReplicaUp>;

// Opens the streams a node starts. A stream that cannot be set up ends at
// once (its on_done runs), as one whose peer goes away does.
// Thread-safety: every method may be called from any thread.
class Connector {
 public:
  virtual ~Connector() = default;
  virtual std::shared_ptr<FrontendLink> OpenFrontend(const std::string& scheduler, FrontendHandlers handlers) = 0;
  virtual std::shared_ptr<BackendLink> OpenBackend(const std::string& scheduler, BackendHandlers handlers) = 0;
  virtual std::shared_ptr<FeedLink> OpenFeed(const std::string& backend, FeedHandlers handlers) = 0;
  virtual std::shared_ptr<ReplicaLink> OpenReplica(const std::string& backup, ReplicaHandlers handlers) = 0;
};

// What accepts streams: a node answers with its handlers, or none to
// refuse (the stream is then closed).
struct Acceptors {
  std::function<std::optional<FrontendPeerHandlers>(std::shared_ptr<FrontendPeer>)> frontend;
  std::function<std::optional<BackendPeerHandlers>(std::shared_ptr<BackendPeer>)> backend;
  std::function<std::optional<FeedPeerHandlers>(std::shared_ptr<FeedPeer>)> feed;
  std::function<std::optional<ReplicaPeerHandlers>(std::shared_ptr<ReplicaPeer>)> replica;
};

// The internal protocol on Tutti's wire, on one io_context (a process's
// EventLoop thread 0: its timers and its streams on one thread).
class WireConnector final : public Connector {
 public:
  // Streams are mutual TLS under `tls` unless null.
  explicit WireConnector(boost::asio::io_context& io, std::shared_ptr<PeerTls> tls = nullptr)
      : io_(io), tls_(std::move(tls)) {}
  std::shared_ptr<FrontendLink> OpenFrontend(const std::string& scheduler, FrontendHandlers handlers) override;
  std::shared_ptr<BackendLink> OpenBackend(const std::string& scheduler, BackendHandlers handlers) override;
  std::shared_ptr<FeedLink> OpenFeed(const std::string& backend, FeedHandlers handlers) override;
  std::shared_ptr<ReplicaLink> OpenReplica(const std::string& backup, ReplicaHandlers handlers) override;

 private:
  boost::asio::io_context& io_;
  const std::shared_ptr<PeerTls> tls_;
};

class WireListener;
// Listens on `address` (net/wire.h) on `io` and hands each stream to the
// acceptor of its kind; streams of a kind without an acceptor are closed.
// Under `tls` (unless null), peers without the cluster's certificate are
// refused before any stream is handed over.
absl::StatusOr<std::unique_ptr<WireListener>> ServeWire(boost::asio::io_context& io, const std::string& address,
                                                       Acceptors acceptors, std::shared_ptr<PeerTls> tls = nullptr);

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_LINKS_H_
