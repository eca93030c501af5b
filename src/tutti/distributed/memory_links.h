// MemoryNetwork: the internal protocol's streams (distributed/links.h)
// inside one process, on one injected clock — for deterministic tests of
// the distributed nodes with a ManualClock: no sockets, no threads.
//
// A message leaves `latency` after the first Send that went into it (what
// is sent meanwhile joins it, as on the wire) and is serialized and parsed
// on its way, so what arrives is what the wire would carry. A Close()
// reaches the other side `latency` later; both sides' on_done then run. A
// stream to an address nobody listens on, or that its acceptor refuses,
// ends at once (at the next timer). Sever(address) ends every stream to or
// from it now (a connection reset); Isolate(address) also ends every later
// one (the process died, or is cut off). Cut(a, b) is a partition that
// ends nothing, as TCP sees one: the streams open between a and b carry
// nothing from then on (a connection that lived through a partition
// resends only when its backed-off timer fires: here, never), and one
// opened while it lasts keeps what is sent on it, even once closed, until
// the partition heals and its dial is resent (1, 3, 7, … s after it
// began); then its acceptor gets it and all it holds.
//
// Thread-safety: none; everything runs on the clock's thread (a ManualClock
// advanced by the test).
#ifndef TUTTI_DISTRIBUTED_MEMORY_LINKS_H_
#define TUTTI_DISTRIBUTED_MEMORY_LINKS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/core/clock.h"
#include "tutti/distributed/links.h"

namespace tutti {

class MemoryNetwork {
 public:
  MemoryNetwork(Clock* clock, Duration latency) : clock_(clock), latency_(latency) {}
  ~MemoryNetwork();  // drops the handlers of streams still open, without calling them

  // Streams opened to `address` are accepted by `acceptors`.
  void Listen(const std::string& address, Acceptors acceptors) { listeners_[address] = std::move(acceptors); }
  // Streams opened to `address` from now on end at once.
  void Unlisten(const std::string& address) { listeners_.erase(address); }
  // Ends every stream to or from `address` now: both sides' on_done run.
  void Sever(const std::string& address);
  // Sever(address), and streams to or from it end at once from now on.
  void Isolate(const std::string& address) {
    isolated_.insert(address);
    Sever(address);
  }
  // Partitions a from b (either way round) until Heal(a, b).
  void Cut(const std::string& a, const std::string& b);
  void Heal(const std::string& a, const std::string& b);
  // The streams that have not ended.
  int open_streams() const;

  // The Connector of the process at `address` (its streams count as from
  // there for Sever). Owned by the network.
  Connector* ConnectorFor(const std::string& address);

 private:
  struct StreamBase {
    virtual ~StreamBase() = default;
    // Runs both sides' on_done once; drops the handlers.
    virtual void End(bool notify) = 0;
    std::string from, to;
    bool ended = false;
    bool silent = false;  // cut off while open: what is sent is lost
    // Opened during a cut: hands it to its acceptor once the dial gets
    // through (null once it has, or if it never will).
    std::function<void()> connect;
    Time opened = 0;
    bool close_when_connected = false;  // closed by its opener while dialing
  };
  template <typename Up, typename Down>
  struct Stream;
  template <typename Out>
  class End;
  class ProcessConnector;

  template <typename Up, typename Down>
  std::shared_ptr<Link<Up>> Open(const std::string& from, const std::string& to, StreamHandlers<Down, Up> handlers);

  Clock* const clock_;
  const Duration latency_;
  std::map<std::string, Acceptors> listeners_;
  static std::pair<std::string, std::string> Pair(const std::string& a, const std::string& b) {
    return a < b ? std::pair(a, b) : std::pair(b, a);
  }
  std::set<std::string> isolated_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::vector<std::shared_ptr<StreamBase>> streams_;
  std::map<std::string, std::unique_ptr<Connector>> connectors_;
};

// ---- implementation ---------------------------------------------------------------

template <typename Up, typename Down>
struct MemoryNetwork::Stream final : StreamBase {
  StreamHandlers<Down, Up> opener;    // at the opener: receives Down
  StreamHandlers<Up, Down> acceptor;  // at the acceptor: receives Up
  void End(bool notify) override {
    if (ended) return;
    ended = true;
    connect = nullptr;
    auto a = std::move(opener.on_done), b = std::move(acceptor.on_done);
    opener = {};
    acceptor = {};
    if (!notify) return;
    if (a) a();
    if (b) b();
  }
};

// One side's link: what it sends goes to `deliver` (the other side's
// on_message), stamped by `stamp` (this side's); the stream holds both.
template <typename Out>
class MemoryNetwork::End final : public Link<Out>, public std::enable_shared_from_this<End<Out>> {
 public:
  End(Clock* clock, Duration latency, std::shared_ptr<StreamBase> stream, std::function<void(Out&)>* deliver,
      std::function<void(Out*)>* stamp)
      : clock_(clock), latency_(latency), stream_(std::move(stream)), deliver_(deliver), stamp_(stamp) {}

  bool Send(const typename Link<Out>::Fill& fill) override {
    if (!open()) return false;
    fill(&pending_);
    if (!scheduled_) {
      scheduled_ = true;
      clock_->ScheduleAfter(latency_, [self = this->shared_from_this()] { self->Flush(); });
    }
    return true;
  }
  void Close() override {
    if (!open()) return;
    closing_ = true;
    if (stream_->connect) {
      stream_->close_when_connected = true;
      return;
    }
    clock_->ScheduleAfter(latency_, [stream = stream_] { stream->End(true); });
  }
  bool open() const override { return !closing_ && !stream_->ended; }

  // The dial got through: what it holds leaves, then its close.
  void Connected() {
    if (pending_.ByteSizeLong() > 0 && !scheduled_) {
      scheduled_ = true;
      clock_->ScheduleAfter(latency_, [self = this->shared_from_this()] { self->Flush(); });
    }
    if (stream_->close_when_connected) clock_->ScheduleAfter(latency_, [stream = stream_] { stream->End(true); });
  }

 private:
  void Flush() {
    scheduled_ = false;
    if (stream_->connect) return;  // still dialing: it waits, as in the socket's buffer
    Out out;
    out.Swap(&pending_);
    if (stream_->ended || stream_->silent) return;
    if (*stamp_) (*stamp_)(&out);
    Out in;  // what the other side reads off the wire
    in.ParseFromString(out.SerializeAsString());
    if (*deliver_) (*deliver_)(in);
  }

  Clock* const clock_;
  const Duration latency_;
  const std::shared_ptr<StreamBase> stream_;  // owns *deliver_ and *stamp_
  std::function<void(Out&)>* const deliver_;
  std::function<void(Out*)>* const stamp_;
  Out pending_;
  bool scheduled_ = false;
  bool closing_ = false;
};

template <typename Up, typename Down>
std::shared_ptr<Link<Up>> MemoryNetwork::Open(const std::string& from, const std::string& to,
                                              StreamHandlers<Down, Up> handlers) {
  auto stream = std::make_shared<Stream<Up, Down>>();
  stream->from = from;
  stream->to = to;
  stream->opener = std::move(handlers);
  streams_.push_back(stream);
  auto up = std::make_shared<End<Up>>(clock_, latency_, stream, &stream->acceptor.on_message, &stream->opener.stamp);
  auto down =
      std::make_shared<End<Down>>(clock_, latency_, stream, &stream->opener.on_message, &stream->acceptor.stamp);
  auto accept = [this, stream, down, to, from] {
    std::optional<StreamHandlers<Up, Down>> accepted;
    if (auto it = listeners_.find(to); it != listeners_.end() && !isolated_.count(from) && !isolated_.count(to)) {
      const Acceptors& a = it->second;
      if constexpr (std::is_same_v<Up, internal::FrontendUp>) {
        if (a.frontend) accepted = a.frontend(down);
      } else if constexpr (std::is_same_v<Up, internal::BackendUp>) {
        if (a.backend) accepted = a.backend(down);
      } else if constexpr (std::is_same_v<Up, internal::ReplicaDown>) {
        if (a.replica) accepted = a.replica(down);
      } else {
        if (a.feed) accepted = a.feed(down);
      }
    }
    if (accepted) {
      stream->acceptor = std::move(*accepted);
    } else {  // nobody listens there, or it refused
      clock_->ScheduleAfter(0, [stream] { stream->End(true); });
    }
  };
  if (cuts_.count(Pair(from, to))) {
    stream->opened = clock_->Now();
    stream->connect = [accept, up] {
      accept();
      up->Connected();
    };
  } else {
    accept();
  }
  return up;
}

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_MEMORY_LINKS_H_
