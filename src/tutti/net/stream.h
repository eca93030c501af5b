// Message streams, transport-neutral: what a node of distributed Tutti
// holds to talk to a peer. A stream carries messages one way through a
// Link (the sending side) and the other way into StreamHandlers (the
// receiving side). The wire (net/wire_stream.h) implements links over
// sockets; tests implement them in memory.
//
// Messages are protobufs made of repeated fields, so a link coalesces:
// what is sent while the previous message waits to leave is merged into
// the next one — under load many events share a message, alone an event
// leaves at once.
#ifndef TUTTI_NET_STREAM_H_
#define TUTTI_NET_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace tutti {

// What every stream's sending side can do, whatever its messages.
class Closable {
 public:
  virtual ~Closable() = default;
  // Ends the stream from this side once what was sent before has left (a
  // broken connection may lose it); nothing more is sent. The handlers'
  // on_done follows. Idempotent.
  virtual void Close() = 0;
};

// The sending side of one stream.
// Thread-safety: every method may be called from any thread. Send() never
// blocks and never calls back into its caller, so it may be called with the
// caller's locks held.
template <typename Out>
class Link : public Closable {
 public:
  using Fill = std::function<void(Out*)>;

  // Adds to the next message: `fill` appends to it (it runs before Send()
  // returns). False, and nothing sent, once the stream is closing or ended.
  virtual bool Send(const Fill& fill) = 0;
  virtual bool open() const = 0;
};

// The receiving side of one stream. Handlers run one at a time per stream,
// on the transport's thread; they must not block.
template <typename In, typename Out>
struct StreamHandlers {
  std::function<void(In&)> on_message;
  std::function<void()> on_done;          // the stream ended, from either side; runs once, last
  std::function<void(Out*)> stamp;        // a last touch before each message leaves (e.g. its send time)
};

// Counts an owner's streams, so that it can close them and wait, before it
// is destroyed, for their handlers (which point at it) to have run for the
// last time.
//
// Thread-safety: every method may be called from any thread.
class StreamTracker {
 public:
  ~StreamTracker() { WaitAll(); }
  // `handlers`, counted until their on_done has run; CloseAll() closes
  // `link` (if given: the streams the owner accepted rather than opened).
  template <typename In, typename Out>
  StreamHandlers<In, Out> Track(StreamHandlers<In, Out> handlers, const std::shared_ptr<Link<Out>>& link = nullptr) {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = next_++;
      live_[id] = link;
    }
    handlers.on_done = [this, id, done = std::move(handlers.on_done)] {
      if (done) done();
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(id);
      if (live_.empty()) idle_.notify_all();
    };
    return handlers;
  }
  // Closes every stream tracked with its link.
  void CloseAll() {
    std::vector<std::shared_ptr<Closable>> links;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, weak] : live_) {
        if (auto link = weak.lock()) links.push_back(std::move(link));
      }
    }
    for (auto& link : links) link->Close();
  }
  // Blocks until every tracked stream has ended (close them first).
  // REQUIRES: not called from a transport thread that runs their handlers.
  void WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return live_.empty(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  std::unordered_map<uint64_t, std::weak_ptr<Closable>> live_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tutti

#endif  // TUTTI_NET_STREAM_H_
