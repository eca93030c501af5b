// SchedulerNode: the scheduler process's data plane in distributed mode. It
// runs the same Scheduler object as embedded mode, on the real clock, over
// request metadata that frontends submit (Symphony §4.1); it sends each
// dispatched batch as a plan to the backend that holds its GPU slot, and
// tells frontends which of their requests it dropped.
//
// GPU slots: the cluster layout's GPUs, group by group. A backend that
// registers takes a free slot of its group (extra backends wait as spares
// and take the slot of one that leaves). A slot without a backend is down in
// the scheduler. When a backend leaves (its etcd lease expired, or a plan
// could not be delivered to it), the requests of the batches it had not
// reported done are submitted again with their original deadlines: the
// scheduler re-dispatches those that can still make it and drops the rest,
// which their frontends answer with an error.
//
// Leadership (Symphony §6's hot spares): a node serves Submit only after
// Lead(); a spare answers UNAVAILABLE. Lead() rebuilds the GPU state by asking
// each backend how long the work it holds will keep it busy.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_
#define TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "tutti/core/clock.h"
#include "tutti/core/serialized_clock.h"
#include "tutti/distributed/rpc_util.h"
#include "tutti/proto/tutti_internal.grpc.pb.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

struct BackendInfo {
  std::string id;
  std::string address;  // host:port of its Backend service
  int group = 0;        // its executor group (sub-cluster)
};

class SchedulerNode final : public internal::Scheduler::CallbackService {
 public:
  struct Options {
    std::string policy = "deferred";
    SchedulerOptions scheduler;
    Duration rpc_timeout = kSecond;
  };
  // `spec`'s sub-clusters are the executor groups. `clock` must be real and
  // outlive the node.
  SchedulerNode(ClusterSpec spec, Options options, Clock* clock);
  ~SchedulerNode() override;

  // Builds the scheduler and starts serving Submit, with `backends` (asked
  // for their state). Errors: a policy without membership (nexus) or an
  // invalid spec.
  absl::Status Lead(const std::vector<BackendInfo>& backends);
  bool leading() const;
  // This node's Scheduler service (host:port), where backends report
  // BatchDone. Set it before Lead().
  void SetAddress(const std::string& address);

  // Membership, from the etcd watch. Adding a known backend or removing an
  // unknown one does nothing.
  void AddBackend(const BackendInfo& backend);
  void RemoveBackend(const std::string& id);

  // Backends holding a GPU slot, and spares waiting for one.
  struct Membership {
    int backends = 0, spares = 0;
  };
  Membership membership() const;

  // internal.Scheduler
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context, const internal::SubmitRequest* request,
                                   internal::SubmitReply* reply) override;
  grpc::ServerUnaryReactor* BatchDone(grpc::CallbackServerContext* context,
                                      const internal::BatchDoneRequest* request,
                                      internal::BatchDoneReply* reply) override;

 private:
  struct Origin {  // where a request came from
    int frontend = 0;
    uint64_t id = 0;
  };
  struct FrontendLink {
    std::string address;
    std::unique_ptr<Coalescer<uint64_t>> rejects;
  };
  struct Slot {
    int group = 0;
    std::string backend;  // "" : down
  };
  struct Member {
    BackendInfo info;
    GpuId gpu = -1;  // -1: spare
  };
  struct InFlight {
    GpuId gpu;
    std::vector<Request> requests;
  };

  void OnDispatch(Batch batch);
  void OnDrop(const Request& request);
  // REQUIRES: mu_ held.
  int FrontendIndex(const std::string& address);
  void AssignLocked(Member& member, Duration busy_for);
  void RemoveLocked(const std::string& id, const std::string& why);
  // Runs the RPCs queued under the lock; call without it.
  void Flush();

  const ClusterSpec spec_;
  const Options options_;
  Clock* const clock_;
  std::vector<int> local_index_;  // model → its position in its group
  SerializedClock locked_clock_;
  std::mutex& mu_;
  CallbackListener listener_;
  StubCache<internal::Backend> backends_stubs_;
  StubCache<internal::Frontend> frontend_stubs_;

  std::unique_ptr<Scheduler> scheduler_;                       // GUARDED_BY(mu_); set by Lead()
  std::vector<Slot> slots_;                                    // GUARDED_BY(mu_), by GPU id
  absl::flat_hash_map<std::string, Member> members_;           // GUARDED_BY(mu_), by backend id
  std::vector<std::unique_ptr<FrontendLink>> frontends_;       // GUARDED_BY(mu_)
  absl::flat_hash_map<std::string, int> frontend_index_;       // GUARDED_BY(mu_)
  absl::flat_hash_map<RequestId, Origin> origins_;             // GUARDED_BY(mu_)
  absl::flat_hash_map<uint64_t, InFlight> in_flight_;          // GUARDED_BY(mu_), by batch id
  std::vector<std::function<void()>> outbox_;                  // GUARDED_BY(mu_)
  RequestId next_request_ = 1;                                 // GUARDED_BY(mu_)
  uint64_t next_batch_ = 1;                                    // GUARDED_BY(mu_)
  std::string address_;                                        // GUARDED_BY(mu_)
  bool flushing_ = false;                                      // GUARDED_BY(mu_)
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_
