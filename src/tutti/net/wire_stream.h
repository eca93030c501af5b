// WireStream: a typed message stream (net/stream.h) over a WireConnection:
// `Out` protobufs leave as frames, `In` protobufs arrive.
//
// Coalescing: Send() merges into one pending message and posts its flush
// to the connection's loop once; everything sent before the flush runs —
// all the events one handler or timer produces, or that other threads add
// meanwhile — leaves in one frame, and frames queued while a write is under
// way leave in one write.
//
// Thread-safety: as Link. Handlers run on the connection's loop thread.
#ifndef TUTTI_NET_WIRE_STREAM_H_
#define TUTTI_NET_WIRE_STREAM_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "tutti/net/stream.h"
#include "tutti/net/wire.h"

namespace tutti {

template <typename In, typename Out>
class WireStream final : public Link<Out>, public std::enable_shared_from_this<WireStream<In, Out>> {
 public:
  using Fill = typename Link<Out>::Fill;

  explicit WireStream(std::shared_ptr<WireConnection> connection) : connection_(std::move(connection)) {}

  // Starts receiving into `handlers`. Call once. A payload that does not
  // parse as `In` ends the stream.
  void Start(StreamHandlers<In, Out> handlers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stamp_ = std::move(handlers.stamp);
    }
    connection_->Start(
        [on_message = std::move(handlers.on_message)](const char* data, size_t size) {
          In in;
          if (!in.ParseFromArray(data, static_cast<int>(size))) return false;
          if (on_message) on_message(in);
          return true;
        },
        [self = this->shared_from_this(), on_done = std::move(handlers.on_done)] {
          {
            std::lock_guard<std::mutex> lock(self->mu_);
            self->done_ = true;
          }
          if (on_done) on_done();
        });
  }

  bool Send(const Fill& fill) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || closing_) return false;
    fill(&pending_);
    if (!flush_posted_) {
      flush_posted_ = true;
      boost::asio::post(connection_->context(), [self = this->shared_from_this()] { self->Flush(); });
    }
    return true;
  }

  void Close() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_ || closing_) return;
      closing_ = true;
    }
    connection_->Close();
  }

  bool open() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return !done_ && !closing_;
  }

 private:
  // On the loop thread.
  void Flush() {
    Out message;
    {
      std::lock_guard<std::mutex> lock(mu_);
      flush_posted_ = false;
      if (done_) return;
      message.Swap(&pending_);
      if (stamp_) stamp_(&message);
    }
    std::string frame(4, '\0');
    message.AppendToString(&frame);
    connection_->Write(std::move(frame));
  }

  const std::shared_ptr<WireConnection> connection_;
  mutable std::mutex mu_;
  Out pending_ ABSL_GUARDED_BY(mu_);
  std::function<void(Out*)> stamp_ ABSL_GUARDED_BY(mu_);
  bool flush_posted_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tutti

#endif  // TUTTI_NET_WIRE_STREAM_H_
