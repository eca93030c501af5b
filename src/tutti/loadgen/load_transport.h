// LoadTransport: how the load generator talks to a KServe v2 server — over
// HTTP/1.1 keep-alive connections (the binary tensor extension or JSON) or
// over gRPC (`inference.GRPCInferenceService`). Internal to the load
// generator and its tests.
//
// Thread-safety: Infer() and RunAt() may be called from any thread;
// callbacks run on the transport's threads and must not block.
#ifndef TUTTI_LOADGEN_LOAD_TRANSPORT_H_
#define TUTTI_LOADGEN_LOAD_TRANSPORT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/core/time.h"

namespace tutti {

enum class LoadProtocol { kHttp, kGrpc };

// What the server says about a model (KServe v2 metadata).
struct LoadTarget {
  std::string name;               // a model, or "task:T@A" (below)
  std::string input;              // the input tensor's name
  std::vector<int64_t> shape;     // of one request: [1, item dims…]
  int64_t input_elements = 1;
  bool images = false;            // one 28×28 image per item: send Fashion-MNIST
  // Model-less (INFaaS): requests for `task` (HTTP: to
  // /v2/tasks/{task}/infer; gRPC: ModelInfer with no model name and the
  // `task` parameter) asking for `min_accuracy` (< 0: none), from a target
  // named "task:T" or "task:T@A".
  std::string task;
  double min_accuracy = -1;
};

// One inference answer. `error` is empty for an answer with outputs;
// otherwise a short key to count errors by ("HTTP 503", "gRPC
// UNAVAILABLE", "connection refused …").
struct LoadAnswer {
  std::string error;
  std::string model;          // who answered (model-less: the variant); "" if not said
  std::vector<float> output;  // the first output's values
  bool emulated = false;
  std::optional<Duration> server_time;  // tutti_server_us: receipt to answer, on the server
  // HTTP: when it reached this host (the kernel's receive timestamp).
  std::optional<std::chrono::steady_clock::time_point> arrived;
};

class LoadTransport {
 public:
  using Done = std::function<void(LoadAnswer)>;
  virtual ~LoadTransport() = default;

  // Blocking metadata lookup (a model-less target: its task's first
  // variant's). NotFound for a model or task the server does not serve;
  // Unavailable when the server cannot be reached.
  virtual absl::StatusOr<LoadTarget> Describe(const std::string& model) = 0;
  // Sends one request of `data` (one item) with `params`; `done` is called
  // exactly once unless the transport is destroyed first.
  virtual void Infer(const LoadTarget& target, absl::Span<const float> data, const InferParameters& params,
                     Done done) = 0;
  // Readies the transport for `concurrency` requests in flight at once
  // (HTTP: opens that many keep-alive connections), so that the first
  // seconds of a run do not pay for connection set-up. Blocking.
  virtual absl::Status Prepare(int concurrency) = 0;
  // Runs `fn` at `when` on a transport thread (senders run there).
  virtual void RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) = 0;
};

// `connections`: most keep-alive connections (HTTP); `binary`: the binary
// tensor extension instead of JSON data (HTTP).
// `token` ("" : none) goes with every call as "Authorization: Bearer <token>"
// (gRPC: the `authorization` metadata).
std::unique_ptr<LoadTransport> MakeHttpTransport(const std::string& host, int port, int connections, bool binary,
                                                 const std::string& token = "");
std::unique_ptr<LoadTransport> MakeGrpcTransport(const std::string& host, int port, const std::string& token = "");

}  // namespace tutti

#endif  // TUTTI_LOADGEN_LOAD_TRANSPORT_H_
