// Long-lived gRPC streams for the internal protocol, on gRPC's callback
// API: a server reactor and a client reactor, each with a StreamLink — the
// owner's handle for sending, which coalesces: what is sent while a message
// is on the wire is merged into the next one (the messages are made of
// repeated fields), so under load many events share a write, and alone an
// event leaves at once.
//
// Lifetimes: a reactor deletes itself when its RPC is done (gRPC's OnDone),
// after telling its `on_done` handler; the link outlives it (shared) and
// refuses sends from then on. Handlers run on gRPC's threads, one message at
// a time per stream; they must not block.
#ifndef TUTTI_DISTRIBUTED_STREAM_H_
#define TUTTI_DISTRIBUTED_STREAM_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_callback.h>
#include <grpcpp/support/server_callback.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace tutti {

// The sending side of one stream. Thread-safety: every method may be called
// from any thread.
template <typename Out>
class StreamLink {
 public:
  using Fill = std::function<void(Out*)>;

  // Adds to the next message (`fill` appends to it) and starts a write if
  // none is on the wire. False, and nothing sent, once the stream has ended.
  bool Send(const Fill& fill) {
    std::unique_lock<std::mutex> lock(mu_);
    if (done_ || closing_) return false;
    fill(&pending_);
    has_pending_ = true;
    MaybeWrite(lock);
    return true;
  }
  // Ends the stream from this side (pending sends may be lost). Idempotent.
  void Close() {
    std::unique_lock<std::mutex> lock(mu_);
    if (done_ || closing_ || !close_) return;
    closing_ = true;
    Call(lock, close_);
  }
  bool open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !done_ && !closing_;
  }

  // For reactors: how to write and to close, and a last touch before each
  // write (stamping the time it leaves).
  void Bind(std::function<void(const Out*)> write, std::function<void()> close, Fill stamp) {
    std::lock_guard<std::mutex> lock(mu_);
    write_ = std::move(write);
    close_ = std::move(close);
    stamp_ = std::move(stamp);
  }
  void WriteDone(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) return;  // the stream is ending; OnDone follows
    MaybeWrite(lock);
  }
  // The reactor is done: no more calls into it; waits for those under way.
  void Done() {
    std::unique_lock<std::mutex> lock(mu_);
    done_ = true;
    idle_.wait(lock, [this] { return calls_ == 0; });
  }

 private:
  // REQUIRES: lock holds mu_; releases it to start the write.
  void MaybeWrite(std::unique_lock<std::mutex>& lock) {
    if (writing_ || !has_pending_ || done_ || !write_) return;
    wire_.Clear();
    wire_.Swap(&pending_);
    has_pending_ = false;
    writing_ = true;
    if (stamp_) stamp_(&wire_);
    Call(lock, [this] { write_(&wire_); });  // wire_ stays untouched until WriteDone
  }

  // Calls into the reactor without mu_ (gRPC may react on other threads);
  // Done() waits for it. REQUIRES: lock holds mu_; holds it again on return.
  void Call(std::unique_lock<std::mutex>& lock, const std::function<void()>& call) {
    ++calls_;
    lock.unlock();
    call();
    lock.lock();
    if (--calls_ == 0) idle_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable idle_;
  int calls_ = 0;             // GUARDED_BY(mu_): calls into the reactor under way
  Out pending_;               // GUARDED_BY(mu_)
  Out wire_;                  // on the wire while writing_
  bool has_pending_ = false;  // GUARDED_BY(mu_)
  bool writing_ = false;      // GUARDED_BY(mu_)
  bool closing_ = false;      // GUARDED_BY(mu_)
  bool done_ = false;         // GUARDED_BY(mu_)
  std::function<void(const Out*)> write_;
  std::function<void()> close_;
  Fill stamp_;
};

template <typename In, typename Out>
struct StreamHandlers {
  std::function<void(In&)> on_message;
  std::function<void()> on_done;  // the stream ended, from either side
  typename StreamLink<Out>::Fill stamp;
};

// Counts an owner's streams, so that it can wait, before it is destroyed,
// for their handlers (which point at it) to have run for the last time.
class StreamTracker {
 public:
  ~StreamTracker() { WaitAll(); }
  // `handlers`, counted until their on_done has run.
  template <typename In, typename Out>
  StreamHandlers<In, Out> Track(StreamHandlers<In, Out> handlers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++live_;
    }
    handlers.on_done = [this, done = std::move(handlers.on_done)] {
      if (done) done();
      std::lock_guard<std::mutex> lock(mu_);
      if (--live_ == 0) idle_.notify_all();
    };
    return handlers;
  }
  // Blocks until every tracked stream has ended (close them first).
  void WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return live_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  int live_ = 0;  // GUARDED_BY(mu_)
};

// The server side of a bidi stream. Create it in the service method, wire
// its link, call Start(), return it.
template <typename In, typename Out>
class ServerStream final : public grpc::ServerBidiReactor<In, Out> {
 public:
  explicit ServerStream(StreamHandlers<In, Out> handlers)
      : handlers_(std::move(handlers)), link_(std::make_shared<StreamLink<Out>>()) {
    link_->Bind([this](const Out* m) { this->StartWrite(m); }, [this] { FinishOnce(grpc::Status::OK); },
                handlers_.stamp);
  }
  const std::shared_ptr<StreamLink<Out>>& link() const { return link_; }
  void Start() { this->StartRead(&in_); }
  // Refuses the stream (before Start()).
  void Refuse(const grpc::Status& status) { FinishOnce(status); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client is done writing (or gone)
      FinishOnce(grpc::Status::OK);
      return;
    }
    if (handlers_.on_message) handlers_.on_message(in_);
    this->StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { link_->WriteDone(ok); }
  void OnDone() override {
    link_->Done();
    if (handlers_.on_done) handlers_.on_done();
    delete this;
  }

 private:
  void FinishOnce(const grpc::Status& status) {
    std::lock_guard<std::mutex> lock(finish_mu_);
    if (finished_) return;
    finished_ = true;
    this->Finish(status);
  }

  const StreamHandlers<In, Out> handlers_;
  const std::shared_ptr<StreamLink<Out>> link_;
  In in_;
  std::mutex finish_mu_;
  bool finished_ = false;  // GUARDED_BY(finish_mu_)
};

// The client side of a bidi stream: `begin(context, reactor)` starts the
// RPC on a stub, e.g. [stub](auto* c, auto* r) { stub->async()->Feed(c, r); }.
// Closing cancels the call.
template <typename Out, typename In>
class ClientStream final : public grpc::ClientBidiReactor<Out, In> {
 public:
  using Begin = std::function<void(grpc::ClientContext*, grpc::ClientBidiReactor<Out, In>*)>;
  // Starts the stream; its link is returned (the reactor owns itself).
  static std::shared_ptr<StreamLink<Out>> Open(const Begin& begin, StreamHandlers<In, Out> handlers) {
    auto* s = new ClientStream(std::move(handlers));
    std::shared_ptr<StreamLink<Out>> link = s->link_;
    begin(&s->context_, s);
    s->StartRead(&s->in_);
    s->StartCall();
    return link;
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (handlers_.on_message) handlers_.on_message(in_);
    this->StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { link_->WriteDone(ok); }
  void OnDone(const grpc::Status&) override {
    link_->Done();
    if (handlers_.on_done) handlers_.on_done();
    delete this;
  }

 private:
  explicit ClientStream(StreamHandlers<In, Out> handlers)
      : handlers_(std::move(handlers)), link_(std::make_shared<StreamLink<Out>>()) {
    link_->Bind([this](const Out* m) { this->StartWrite(m); }, [this] { context_.TryCancel(); }, handlers_.stamp);
  }

  const StreamHandlers<In, Out> handlers_;
  const std::shared_ptr<StreamLink<Out>> link_;
  grpc::ClientContext context_;
  In in_;
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_STREAM_H_
