// SchedulerNode: the scheduler process's data plane in distributed mode. It
// runs the same Scheduler object as embedded mode, on the real clock, over
// the request metadata that frontends submit on their streams (Symphony
// §4.1). Each dispatched batch becomes plan parts, one to each frontend
// holding some of its requests, naming the backend; the frontends send the
// inputs to that backend, which reports the batch done on its own stream.
//
// GPU slots: the cluster layout's GPUs, group by group. A backend that says
// hello on its stream takes a free slot of its group (extra backends wait as
// spares and take the slot of one that leaves). A slot without a backend is
// down in the scheduler. When a backend leaves (its stream ended, or its etcd
// lease expired), the requests of the batches it had not reported done are
// submitted again with their original deadlines: re-dispatched if they can
// still make it, dropped otherwise (and their frontends answer with an
// error). A frontend that leaves loses its queued requests.
//
// Delays (delays/delay_model.h): the node measures what its batches meet —
// decision → the backend holding the batch's inputs (dispatch), how the
// batch ran (compute), its own timers — and the frontends report how long
// answers take to leave (response); its DelayModel makes the scheduler's
// plan, and the frontends get the report for their /metrics. Instants are
// the node's clock ("cluster time"); the peers convert with the pongs it
// sends them (distributed/clock_sync.h).
//
// Roles (HAMS's primary-backup): each backend of a stateful group
// (Options::stateful_groups) is told whether it holds its slot and, if so,
// which spare of its group is its backup (holders and spares paired in slot
// and join order), whenever that changes. A backend that
// says in its hello that it serves as a primary (a new leader's first
// hellos) takes its group's free slot before the others.
//
// Autoscaling (Options::autoscale; Symphony §3.5 acted on): the
// leader runs an Autoscaler (autoscale/autoscaler.h) over the slots, fed by
// what its batches did (answered by their deadlines or not, GPU time). A
// slot it no longer wants takes no new batches; once the batches it holds
// are done, its backend becomes a spare. A slot it wants again goes to a
// spare, or waits for a backend to come. Starting and stopping backend
// processes is the provider's: it reads Autoscaling() (the scheduler
// process publishes it in etcd) — start backends while fewer than `wanted`
// are up, stop spares while more are.
//
// Model-less serving (Options::model_less) scales the variants' slots the
// same way, and the provider follows the backends wanted per group.
//
// Leadership (Symphony §6's hot spares): a node accepts streams only after
// Lead(); a spare refuses them.
//
// Streams (distributed/links.h) come in through AcceptFrontend() and
// AcceptBackend(); the node never sees a socket.
//
// Thread-safety: every method may be called from any thread. Destruction
// closes the node's streams and waits for their handlers' last call, so
// their transport must still be running then.
#ifndef TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_
#define TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "tutti/tracing/tracer.h"
#include "tutti/autoscale/autoscaler.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/core/clock.h"
#include "tutti/core/serialized_clock.h"
#include "tutti/delays/delay_model.h"
#include "tutti/distributed/delay_report_proto.h"
#include "tutti/distributed/links.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

class SchedulerNode {
 public:
  struct Options {
    std::string policy = "deferred";
    SchedulerOptions scheduler;
    DelayModelOptions delays;
    Duration report_every = 500 * kMillisecond;  // the delay report to frontends
    // By executor group: whether it holds a stateful model. Only their
    // backends are given roles (below).
    std::vector<bool> stateful_groups;
    // > 0: a backend of a stateful group that leaves a batch unreported this
    // long past its planned end is taken as dead (HAMS's failure detection,
    // faster than the etcd lease), as if its lease had expired; it is told
    // so, and says hello again (as a spare) if it wakes. A backend that has
    // just taken over a slot from one that left is given 10 × detect_after
    // first: the backup recovers (checkpoint-replay reruns its logged
    // batches) before it answers, and a recovery is not a hang (its lease
    // still covers it).
    Duration detect_after = 0;
    // Closed-loop autoscaling over the slots (one executor group); none:
    // every slot is wanted.
    std::optional<AutoscaleOptions> autoscale;
    // Model-less serving of one task (INFaaS; autoscale/task_autoscaler.h):
    // the leader runs a TaskAutoscaler over the variants' slots, acted on as
    // the autoscaler's are (above). It counts each request a frontend
    // submits for a variant as routed to it, loads the Inactive variants
    // the frontends' routers ask for, and sends its routing state with each
    // delay report and whenever an instance is asked for, comes up or goes.
    // Autoscaling() then says how many backends each group wants.
    struct ModelLess {
      ModelLessTask task;           // the variants' slots: GPU ids of `spec`
      std::vector<ModelId> models;  // per variant: its model
    };
    std::optional<ModelLess> model_less;
    // Records a "schedule" span (receipt to dispatch or drop) for each
    // traced request (null: none). Outlives the node.
    Tracer* tracer = nullptr;
    // Called before each plan leaves: it does not return if the leader's
    // lease may be gone (fencing). None: not checked.
    std::function<void()> holds_lease;
  };
  // `spec`'s sub-clusters are the executor groups. `clock` must be real and
  // outlive the node.
  SchedulerNode(ClusterSpec spec, Options options, Clock* clock);
  ~SchedulerNode();

  // Builds the scheduler (every GPU down until a backend says hello) and
  // starts serving streams. Errors: a policy without membership (nexus).
  absl::Status Lead();
  bool leading() const;

  // A backend's etcd lease expired: as if its stream ended.
  void RemoveBackend(const std::string& id);

  // Backends holding a GPU slot, spares waiting for one, and frontends.
  struct Membership {
    int backends = 0, spares = 0, frontends = 0;
  };
  Membership membership() const;

  // While leading with Options::autoscale: the backends wanted (slots up or
  // on their way: Autoscaler::requested()), the slots up, and the spares
  // (backends holding no slot: the ones to stop first), by id.
  struct AutoscaleState {
    int wanted = 0, up = 0;
    std::vector<std::string> spares;
    // Model-less: backends wanted per executor group (-1: a group not
    // scaled, whose backends are left alone); `wanted` and `up` count the
    // scaled groups'. Empty: `wanted` are all the first group's.
    std::vector<int> groups;
    bool operator==(const AutoscaleState&) const = default;
  };
  std::optional<AutoscaleState> Autoscaling() const;
  DelayReport Delays() const;
  // Requests its scheduler holds: queued, not yet in a batch or dropped.
  int64_t queued() const;

  // A frontend (backend) opened a stream to this node; `link` sends to it.
  // The handlers for what it sends, or none — refused — while this node
  // does not lead.
  std::optional<FrontendPeerHandlers> AcceptFrontend(std::shared_ptr<FrontendPeer> link);
  std::optional<BackendPeerHandlers> AcceptBackend(std::shared_ptr<BackendPeer> link);

 private:
  struct Origin {  // where a request came from
    int frontend = 0;
    uint64_t id = 0;
    ModelId model = 0;
    TraceContext trace;  // its frontend's span, when traced
  };
  struct FrontendState {
    std::string name;
    std::shared_ptr<FrontendPeer> link;  // null: gone
    uint64_t incarnation = 0, stream = 0;  // link's (FrontendUp's)
  };
  struct Slot {
    int group = 0;
    std::string backend;  // "" : down
    Time taken_over = kInfiniteFuture;  // when `backend` took it from one that left (else never)
    bool lost = false;                  // its holder left; the next one takes it over
    bool wanted = true;                 // autoscaling: false while released (see above)
  };
  struct Member {
    std::string id;
    int group = 0;
    std::string address;
    std::shared_ptr<BackendPeer> link;
    GpuId gpu = -1;       // -1: spare
    uint64_t joined = 0;  // join order
    Time free_at = 0;     // when what it held at joining is done
    std::string role;     // the role last sent (SendRolesLocked)
  };
  struct InFlight {
    GpuId gpu;
    Time decided;
    Time due;  // its planned end
    std::vector<Request> requests;
  };

  void OnFrontendMessage(int* frontend, const std::shared_ptr<FrontendPeer>& link, internal::FrontendUp& up);
  void OnFrontendGone(int frontend, const std::shared_ptr<FrontendPeer>& link);
  void OnBackendMessage(const std::shared_ptr<BackendPeer>& link, std::string* id, internal::BackendUp& up);
  void OnBackendGone(const std::shared_ptr<BackendPeer>& link, const std::string& id);
  void OnDispatch(Batch batch);
  void OnDrop(const Request& request, DropReason reason);
  // Withdraws the requests of `frontend` (its ids) the scheduler still holds.
  void WithdrawLocked(int frontend, absl::Span<const uint64_t> ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The "schedule" span of a traced request: dispatched in `batch`, or
  // (null) dropped with `error`.
  void RecordSchedule(const Origin& origin, const Request& r, const Batch* batch, const std::string& error);
  // REQUIRES: mu_ held.
  // Gives free slots to members without one (slot_assignment.h).
  void AssignSlotsLocked();  // then SendRolesLocked()
  void SendRolesLocked();
  void RemoveLocked(const std::string& id, const std::string& why);
  // Autoscaling: a slot wanted again, or released (no new batches; its
  // holder becomes a spare once its batches are done: ReleaseIfDrainedLocked).
  void SetSlotWantedLocked(GpuId gpu, bool wanted);
  void ReleaseIfDrainedLocked(GpuId gpu);
  void DoneLocked(const internal::Done& done);
  void SendReportLocked();
  // Model-less: the routing state for the frontends (none without a task
  // autoscaler), and sending it alone.
  std::optional<internal::TaskState> TaskStateLocked();
  void SendTaskStateLocked();
  DelayReport ReportLocked() const;  // the delays and the scheduler's choices; REQUIRES: delays_
  void ReportTick();
  void DetectTick();  // Options::detect_after
  bool Stateful(int group) const {
    return group < static_cast<int>(options_.stateful_groups.size()) && options_.stateful_groups[group];
  }
  // Sends on `link`, if there is one.
  template <typename Msg>
  static void Send(const std::shared_ptr<Link<Msg>>& link, const std::function<void(Msg*)>& fill) {
    if (link) link->Send(fill);
  }

  const ClusterSpec spec_;
  const Options options_;
  Clock* const clock_;
  std::vector<int> local_index_;  // model → its position in its group
  SerializedClock locked_clock_;
  std::mutex& mu_;
  CallbackListener listener_;

  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);  // set by Lead()
  std::unique_ptr<DelayModel> delays_ ABSL_GUARDED_BY(mu_);  // set by Lead()
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);  // by GPU id
  absl::flat_hash_map<std::string, Member> members_ ABSL_GUARDED_BY(mu_);  // by backend id
  uint64_t joins_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<FrontendState> frontends_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> frontend_index_ ABSL_GUARDED_BY(mu_);  // by name
  absl::flat_hash_map<RequestId, Origin> origins_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);  // by batch id
  RequestId next_request_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_batch_ ABSL_GUARDED_BY(mu_);
  TimerId report_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  TimerId detect_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  std::unique_ptr<Autoscaler> autoscaler_ ABSL_GUARDED_BY(mu_);  // set by Lead() with Options::autoscale
  std::unique_ptr<TaskAutoscaler> task_scaler_ ABSL_GUARDED_BY(mu_);  // set by Lead() with Options::model_less
  std::vector<int> variant_of_model_;  // model → its variant in Options::model_less (-1: none); set by Lead()
  Autoscaler::Window window_ ABSL_GUARDED_BY(mu_);               // what batches did since the last tick
  StreamTracker streams_;  // last: destroyed first, once every stream has ended
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_SCHEDULER_NODE_H_
