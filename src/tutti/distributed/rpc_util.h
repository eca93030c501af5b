// Helpers shared by the distributed processes: cached client stubs per
// peer address, one-shot async unary calls, the coalescing sender, and the
// etcd key layout.
#ifndef TUTTI_DISTRIBUTED_RPC_UTIL_H_
#define TUTTI_DISTRIBUTED_RPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/time.h"
#include "tutti/frontend/grpc_util.h"

namespace tutti {

// Where a cluster keeps its state in etcd, under /tutti/<cluster>/:
//   backends/<id>  "<group> <host:port>", under the backend's lease
//   leader         "<host:port>" of the leading scheduler, under its lease
struct ClusterKeys {
  std::string root;  // "/tutti/<cluster>/"
  explicit ClusterKeys(const std::string& cluster) : root(absl::StrCat("/tutti/", cluster, "/")) {}
  std::string backends() const { return root + "backends/"; }
  std::string backend(const std::string& id) const { return backends() + id; }
  std::string leader() const { return root + "leader"; }
};

// One channel and stub per peer address, created on first use.
// Thread-safety: Get() may be called from any thread; stubs live as long as
// the cache.
template <typename Service>
class StubCache {
 public:
  typename Service::Stub* Get(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& stub = stubs_[address];
    if (stub == nullptr) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(256 << 20);
      stub = Service::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    }
    return stub.get();
  }

 private:
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<typename Service::Stub>> stubs_;
};

// Starts an async unary call with a deadline `timeout` from now:
// `start(context, request, response, callback)` issues it, e.g.
//   [stub](auto... a) { stub->async()->Execute(a...); }
// and `done(status, response)` runs once, on a gRPC thread.
template <typename Response, typename Request, typename Start>
void CallAsync(Duration timeout, Request request, Start start,
               std::function<void(const grpc::Status&, Response&)> done) {
  struct Call {
    grpc::ClientContext context;
    Request request;
    Response response;
  };
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  call->context.set_deadline(GrpcDeadline(timeout));
  start(&call->context, &call->request, &call->response,
        [call, done = std::move(done)](grpc::Status status) { done(status, call->response); });
}

// FP32 vectors as little-endian bytes (the protocol's `bytes` tensors).
inline std::string FloatsToBytes(const float* data, size_t n) {
  return std::string(reinterpret_cast<const char*>(data), n * sizeof(float));
}
inline std::vector<float> BytesToFloats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// Coalescer: sends items in batches with at most one send in flight. An
// item added while a send is under way goes with the next one, so under
// load many items share an RPC, and alone an item leaves at once.
//
// Thread-safety: Add() may be called from any thread. `send` must call its
// `done` exactly once, from any thread, when the batch has been handled.
template <typename Item>
class Coalescer {
 public:
  using SendFn = std::function<void(std::vector<Item>, std::function<void()> done)>;
  explicit Coalescer(SendFn send) : send_(std::move(send)) {}
  // REQUIRES: idle (WaitIdle()).
  ~Coalescer() = default;

  void Add(Item item) {
    std::unique_lock<std::mutex> lock(mu_);
    pending_.push_back(std::move(item));
    if (busy_) return;
    busy_ = true;
    SendLocked(lock);
  }
  // Blocks until nothing is queued or being sent.
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return !busy_; });
  }

 private:
  void SendLocked(std::unique_lock<std::mutex>& lock) {
    std::vector<Item> batch;
    batch.swap(pending_);
    lock.unlock();
    send_(std::move(batch), [this] {
      std::unique_lock<std::mutex> l(mu_);
      if (pending_.empty()) {
        busy_ = false;
        idle_.notify_all();
        return;
      }
      SendLocked(l);
    });
  }

  const SendFn send_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::vector<Item> pending_;  // GUARDED_BY(mu_)
  bool busy_ = false;          // GUARDED_BY(mu_)
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_RPC_UTIL_H_
