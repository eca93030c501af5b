// BackendNode: a backend process's data plane in distributed mode — one
// executor (a GPU, an emulated GPU or a CPU worker) holding the models of
// one executor group. Frontends send it the parts of each batch with their
// inputs (its Feed service, a stream per frontend); once every part of a
// batch is in it runs the batch (after the one before it), sends
// each part's outputs (or error) back on the stream it came on, and reports
// the batch done to the leading scheduler on its own stream, with its
// timings (Symphony §4.1). A batch whose parts do not all come within
// `part_grace` of its planned start runs with those that did.
//
// The leader stream: a hello (its id, group, Feed address and how long the
// batches it holds keep it busy) once its clock is synced with the leader's
// (clock_sync.h), then pings and completion reports, each sent in the
// wake-up that finished its batch. (Holding them for several to share a
// message saved the scheduler little — a backend's batches are seldom
// closer than a hold worth waiting — and cost the backend a timer wake-up
// per batch: at 2,000 r/s on the emulated A100s, 515 against ~380 backend
// context switches per second.) A new leader gets a new stream and a new
// hello.
//
// Streams (distributed/links.h): feeds come in through AcceptFeed(); the
// leader stream is opened through the Connector.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DISTRIBUTED_BACKEND_NODE_H_
#define TUTTI_DISTRIBUTED_BACKEND_NODE_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "tutti/tracing/tracer.h"
#include "tutti/core/clock.h"
#include "tutti/distributed/clock_sync.h"
#include "tutti/distributed/links.h"
#include "tutti/executors/executor.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

class BackendNode {
 public:
  struct Options {
    std::string id;
    int group = 0;
    Duration ping_every = kSecond;  // pings sync the clock with the leader's
    Duration part_grace = 200 * kMillisecond;
    // A stateful group's backend: what the leader asks of it (its role in
    // HAMS's primary-backup, distributed/replica_node.h), on the leader
    // stream's thread.
    std::function<void(const internal::Role&)> on_role;
    // Whether it serves as such a group's primary now (told in its hello).
    std::function<bool()> is_primary;
    // Records an "execute" span (its batch's run) for each traced request
    // (null: none). Outlives the node.
    Tracer* tracer = nullptr;
  };
  // `shapes[i]` is the size of the executor's model i. `clock` and
  // `connector` must outlive the node.
  BackendNode(Options options, std::unique_ptr<Executor> executor, std::vector<ModelShape> shapes,
              Clock* clock, Connector* connector);
  // WaitIdle(), then closes its streams and waits for their handlers' last
  // call (their transport must still be running).
  ~BackendNode();

  // Its Feed service's address, as frontends reach it (told to the leader).
  // Set it before SetLeader().
  void SetAddress(const std::string& address);
  // The leading scheduler's address; "" while none leads.
  void SetLeader(const std::string& address);
  // Blocks until every batch received has been run and reported.
  void WaitIdle();

  const std::string& id() const { return options_.id; }

  // A frontend opened a feed: `link` sends to it; the handlers for what it sends.
  FeedPeerHandlers AcceptFeed(std::shared_ptr<FeedPeer> link);

 private:
  struct Piece {  // one frontend's part of a batch
    std::shared_ptr<FeedPeer> link;
    std::vector<uint64_t> ids;
    std::string inputs;
    std::vector<SequenceRef> sequences;  // a stateful model's: per id
    uint64_t source = 0;                 // the frontend's name, hashed
    std::vector<TraceContext> traces;    // when any is traced: per id, its frontend's span
  };
  struct Assembly {  // a batch whose parts are coming in
    int model = 0;
    Time exec_at = 0;    // cluster time
    Duration latency = 0;
    int parts = 0;
    std::vector<Piece> pieces;
    TimerId grace_timer = kNoTimer;
  };

  void OnPart(const std::shared_ptr<FeedPeer>& link, internal::Part& part);
  void Run(uint64_t batch, Assembly assembly);
  void Finish(uint64_t batch, const Assembly& assembly, Time ready, ExecResult result);
  void Connect();  // REQUIRES: mu_ held
  void OnLeaderMessage(uint64_t epoch, internal::BackendDown& down);
  void OnLeaderGone(uint64_t epoch);
  void Tick();
  void SendReports();  // the batch's completion report
  Time ToCluster(Time local) const;  // REQUIRES: mu_ held

  const Options options_;
  const std::unique_ptr<Executor> executor_;
  const std::vector<ModelShape> shapes_;
  Clock* const clock_;
  Connector* const connector_;
  StreamTracker streams_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  absl::flat_hash_map<uint64_t, Assembly> assembling_ ABSL_GUARDED_BY(mu_);  // by batch id
  Time busy_until_ ABSL_GUARDED_BY(mu_) = 0;  // when what it holds is predicted done
  int held_ ABSL_GUARDED_BY(mu_) = 0;  // batches received, not yet reported
  std::string address_ ABSL_GUARDED_BY(mu_);
  std::string leader_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<BackendLink> leader_link_ ABSL_GUARDED_BY(mu_);
  std::vector<internal::Done> reports_ ABSL_GUARDED_BY(mu_);  // made, not yet sent
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  ClockSync sync_ ABSL_GUARDED_BY(mu_);
  bool said_hello_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  TimerId tick_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_BACKEND_NODE_H_
