#include "tutti/distributed/links.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <iostream>
#include <utility>

#include "tutti/net/wire.h"
#include "tutti/net/wire_stream.h"

namespace tutti {
namespace {

namespace pb = ::tutti::internal;

// The first byte of a connection: which stream it carries.
enum Kind : uint8_t { kFrontend = 'F', kBackend = 'B', kFeed = 'D', kReplica = 'R' };

// A stream that could not be set up: it has ended.
template <typename Out>
class EndedLink final : public Link<Out> {
 public:
  bool Send(const typename Link<Out>::Fill&) override { return false; }
  void Close() override {}
  bool open() const override { return false; }
};

template <typename In, typename Out>
std::shared_ptr<Link<Out>> Open(boost::asio::io_context& io, const std::shared_ptr<PeerTls>& tls,
                                const std::string& address, Kind kind, StreamHandlers<In, Out> handlers) {
  absl::StatusOr<std::shared_ptr<WireConnection>> c = WireConnection::Dial(io, address, kind, tls);
  if (!c.ok()) {
    std::cerr << "cannot open a stream: " << c.status().message() << std::endl;
    if (handlers.on_done) boost::asio::post(io, std::move(handlers.on_done));
    return std::make_shared<EndedLink<Out>>();
  }
  auto stream = std::make_shared<WireStream<In, Out>>(std::move(*c));
  stream->Start(std::move(handlers));
  return stream;
}

template <typename In, typename Out, typename Acceptor>
void Accept(std::shared_ptr<WireConnection> c, const Acceptor& acceptor) {
  auto stream = std::make_shared<WireStream<In, Out>>(std::move(c));
  std::optional<StreamHandlers<In, Out>> handlers;
  if (acceptor) handlers = acceptor(stream);
  if (!handlers) return stream->Close();
  stream->Start(std::move(*handlers));
}

}  // namespace

std::shared_ptr<FrontendLink> WireConnector::OpenFrontend(const std::string& scheduler, FrontendHandlers handlers) {
  return Open(io_, tls_, scheduler, kFrontend, std::move(handlers));
}

std::shared_ptr<BackendLink> WireConnector::OpenBackend(const std::string& scheduler, BackendHandlers handlers) {
  return Open(io_, tls_, scheduler, kBackend, std::move(handlers));
}

std::shared_ptr<FeedLink> WireConnector::OpenFeed(const std::string& backend, FeedHandlers handlers) {
  return Open(io_, tls_, backend, kFeed, std::move(handlers));
}

std::shared_ptr<ReplicaLink> WireConnector::OpenReplica(const std::string& backup, ReplicaHandlers handlers) {
  return Open(io_, tls_, backup, kReplica, std::move(handlers));
}

absl::StatusOr<std::unique_ptr<WireListener>> ServeWire(boost::asio::io_context& io, const std::string& address,
                                                       Acceptors acceptors, std::shared_ptr<PeerTls> tls) {
  return WireListener::Start(io, address, [acceptors = std::move(acceptors)](uint8_t kind,
                                                                             std::shared_ptr<WireConnection> c) {
    switch (kind) {
      case kFrontend:
        return Accept<pb::FrontendUp, pb::FrontendDown>(std::move(c), acceptors.frontend);
      case kBackend:
        return Accept<pb::BackendUp, pb::BackendDown>(std::move(c), acceptors.backend);
      case kFeed:
        return Accept<pb::FeedDown, pb::FeedUp>(std::move(c), acceptors.feed);
      case kReplica:
        return Accept<pb::ReplicaDown, pb::ReplicaUp>(std::move(c), acceptors.replica);
      default:
        c->Close();
    }
  }, std::move(tls));
}

}  // namespace tutti
