// ReplicatedExecutor's implementation (replicated_executor.h), by seam:
//   replicated_executor.cc  intake (Run never blocks), kept answers, the
//                           distributed mode's attach and standby, delivery
//                           of what was decided under the lock;
//   primary_pipeline.cc     a batch's life at the primary: states in, run,
//                           update stage, release as the backup allows;
//   state_shipping.cc       messages to the backup: logs, states, checkpoints;
//   failover.cc             the failure detector, takeover and recovery, a
//                           spare, promotion and demotion;
// with the mode's conduct in replication_policy.h, the messages in
// state_message.h, the backup's state in backup_state.h and the link in
// backup_link.h. Internal to replication/.
#ifndef TUTTI_REPLICATION_REPLICATED_EXECUTOR_IMPL_H_
#define TUTTI_REPLICATION_REPLICATED_EXECUTOR_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "tutti/core/timer_gate.h"
#include "tutti/replication/backup_link.h"
#include "tutti/replication/backup_state.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/replication/replication_policy.h"
#include "tutti/replication/state_message.h"

namespace tutti {

class ReplicatedExecutor::Impl {
  using Key = replication::Key;
  using State = replication::State;
  using StateMap = replication::StateMap;
  using Kept = replication::Kept;
  using BackupState = replication::BackupState;
  using Outgoing = replication::Outgoing;
  using Channel = replication::Channel;
  using Writer = replication::Writer;
  using Logged = replication::Logged;

  // A batch as Run had it, since `received`: queued for mu_ (incoming_), or
  // for a takeover (deferred_).
  struct Received {
    ExecBatch batch;
    DoneFn done;
    Time received = 0;
  };

 public:
  Impl(Clock* clock, std::unique_ptr<Executor> primary, std::unique_ptr<Executor> backup,
       std::vector<SlotModel> models, ReplicationOptions options, ExecutorFactory spare);

  ~Impl();

  // Never waits long for mu_ (Executor::Run does not block): the batch
  // joins the incoming queue, which this thread takes in if mu_ is free or
  // let go within kRunSpins tries, and otherwise mu_'s holder takes in once
  // it lets go (DrainIncoming). Holders mostly let go within microseconds,
  // so the batches' work stays on Run's thread; one that stays (preempted
  // on a busy core) no longer holds up the dispatching thread.
  void Run(ExecBatch batch, DoneFn done);
  // About 10 µs of tries (a pause each; timed on the 2-core Xeon of the
  // README's figures): longer than a holder's usual hold (its states, log
  // and messages: a few µs), shorter than a preemption.
  static constexpr int kRunSpins = 500;

  // Without mu_: takes in the batches Run queued, unless another thread
  // holds mu_ through `spins` more tries — every holder calls this (Finish)
  // or has it called on the clock's timer (OtherLock) once it lets go, so
  // no batch waits for a later one. Batches are taken in the order Run had
  // them. False when it left them to another thread.
  bool DrainIncoming(int spins = 0);

  // Under mu_: a batch the slot has had since `r.received`.
  void AcceptLocked(Received r);

  std::string kind() const;

  // Distributed mode (see the header).
  void AttachBackup(SendFn send);
  void OnBackupApplied(uint64_t seq) { OnAcked(seq); }
  void DetachBackup();
  bool BeginFromPrimary();
  bool ApplyFromPrimary(const std::string& body);
  void Promote();
  void Demote();
  bool serving() const;

  ReplicationMode mode() const { return options_.mode; }

  absl::Status KillPrimary();
  void HangPrimary();
  ReplicationStats stats() const;

 private:
  struct Row {
    Key key;
    bool start = false, end = false, lost = false;
    uint64_t read_version = 0, read_digest = 0, read_parent = 0;
    uint64_t read_shipped = 0;  // the message carrying the state it read
  };
  struct Pending {
    bool stateful = false;
    ExecBatch served;  // as received: kept until answered, to run again after a failover
    DoneFn done;
    std::vector<Row> rows;
    uint64_t log_seq = 0;
    ExecResult result;         // the primary's, with the states
    uint64_t release_seq = 0;  // remus: its states' message
    Time computed = 0;         // the primary answered
    bool waited = false;       // its release waited for the backup
    bool answered = false;     // by the primary
    bool dispatched = false;   // handed to the primary, at
    Time dispatched_at = 0;
    Time received = 0;  // by the slot (Run)
  };
  using Delivery = std::pair<DoneFn, ExecResult>;
  // Work decided under mu_ and done outside it (Finish): batches for the
  // primary, then answers.
  struct Dispatch {
    Executor* exec;
    int generation;
    uint64_t n;
    ExecBatch batch;
  };
  struct Outside {
    std::vector<Dispatch> dispatch;
    std::vector<Delivery> answers;
    std::shared_ptr<Channel> flush;  // its posted messages wait to be sent
    bool states = false;             // states' messages to be made (ShipStatesLocked)
  };

  // Under mu_: what the primary held of its batches between their run and
  // their release (update stages to come, releases waiting for the backup,
  // a compute-then-update model's turn) — gone with its slot.
  void ForgetStagesLocked();

  // Under mu_: the remote backup goes; nothing waits for it any more.
  void DetachLocked();

  // Under mu_: per item of `batch`, its kept answer (taken out), or none;
  // empty if none is kept.
  std::vector<std::optional<Kept>> TakeKeptLocked(const ExecBatch& batch);

  // The items of `batch` to run (those without a kept answer); `done`
  // becomes the answer that merges their outputs with the kept ones, in
  // the batch's order. All kept: an empty batch, and `done` is to be given
  // an empty result.
  ExecBatch SplitKept(ExecBatch batch, DoneFn& done, std::vector<std::optional<Kept>> kept) const;

  void StartChannel();
  bool replicating() const { return channel_ != nullptr && policy_.keeps_states; }

  // Under mu_: numbers a message to the backup and posts it on the link
  // (a remote backup's transport sends it once mu_ is let go: Deliver).
  // The message is next_, made by the caller; `state`: states or a
  // checkpoint, not a log (ReplicationStats).
  uint64_t Ship(bool state);
  uint64_t Ship(std::string bytes, bool state);

  // Under mu_: every committed state to the backup (a new backup, or
  // checkpoint-replay's period); batches reading them wait for it.
  void ShipCheckpoint(uint64_t n);

  // Under mu_: batch n is committed; the states it wrote (or erased) are
  // to go to the backup, with PutAnswers's part — HAMS's state manager
  // shipping batch n's states while batch n+1 computes. Under NSPB their
  // message is made once the batch's answers have left (Deliver), or
  // before any state is read or written again (ShipStatesLocked), so that
  // making it is on no answer's path; under Remus, whose answers wait for
  // it, at once. The message holds the committed states (small ones copied
  // into its own buffers, large ones shared: Outgoing); the link makes its
  // bytes.
  void QueueStates(uint64_t n, const Pending& p);

  // Under mu_: the messages of the states QueueStates left, in order.
  void ShipStatesLocked();

  bool logs() const { return policy_.logs_inputs; }

  // Under mu_: batch n's inputs, to the backup's log — copied here, their
  // bytes made by the link (Encode).
  uint64_t ShipLog(uint64_t n, const Pending& p);

  // Under mu_: the batch with each item's state after its input, and the
  // rows' reads.
  ExecBatch Prepare(uint64_t n);

  // Under mu_: forgets states idle beyond their model's limit, at most
  // twice per limit.
  void SweepIdle(Time now);

  // Under mu_: stores the states batch n made (its update stage); their
  // message to the backup is QueueStates's.
  void Commit(uint64_t n, Pending& p);

  // Batch n's answers after its states, by tag: the first output elements
  // of each item's `stride`. Tagged items' (distributed: requests that may
  // come again); in one process under remus every item's, by ItemTag —
  // Remus's buffered outputs travel with its states, so a backup that
  // applied the states of a batch whose release died with the primary
  // answers it (Recover) instead of running it twice.
  void PutAnswers(Writer& w, uint64_t n, const Pending& p, int64_t stride);
  // Item i of batch n, in one process (a batch holds fewer than 2^16).
  static uint64_t ItemTag(uint64_t n, int i) { return n << 16 | static_cast<uint64_t>(i + 1); }

  absl::Status LostError(const Key& key) const;

  // Under mu_: the first answer after a failover ends it.
  void NoteAnswerAfterFailover();

  // Under mu_: remus in one process — batch n's states and outputs reached
  // the backup, its release did not: answered with those outputs (its
  // states already hold its effect).
  Delivery AnswerFromBackup(uint64_t n, const BackupState& backup);

  // Under mu_: batch n's answer — its outputs without the states, its lost
  // items' errors — checked by the consistency audit.
  // Not `delivered` (a rerun of a batch answered before): not audited.
  Delivery Answer(uint64_t n, bool delivered = true);

  void Audit(const Row& row);

  // Under mu_: moves computed batches through their update stage and
  // release, in order, as far as the backup's acknowledgements allow.
  void Advance();

  // Under mu_: Advance's moves, with the watermark as it is; returns the
  // message the first batch left waiting waits for (0: none waits).
  uint64_t MoveOn();

  // Under mu_: how far the link to a local backup has delivered (as Advance
  // starts, and when a batch waits: time and the sender deliver more).
  void Refresh();

  // Under mu_: batches wait for the link (ReplicationOptions::link_rtt):
  // Advance again when its next message is delivered.
  void AwaitDelivery();

  void Release(uint64_t n);

  std::string Checkpoint(uint64_t n);

  void OnPrimaryDone(int gen, uint64_t n, ExecResult r);

  // Under mu_: the timings of the primary's answer made the slot's
  // (ExecResult's contract: `received` when Run() was called — the slot's,
  // not the primary's, which the slot calls once it has put the states in).
  // What the slot did before handing the batch on (waiting for its lock,
  // the states, the log) is then its executor's own start, which the delay
  // model reads as a late start (`ready` → `started`), not as dispatch delay
  // — a tail of which every later batch would wait for (Symphony plans the
  // dispatch at a high quantile). What the primary itself waited for (its
  // `ready` after its receipt: the previous batch, or a start_at its kind
  // waits for, executor.h) it keeps.
  void StampReceipt(Pending& p);

  // `seq`: a remote backup's acknowledgement; 0: a local link delivered.
  void OnAcked(uint64_t seq);

  // Under mu_: batch n goes to the primary — unless it is a compute-then-
  // update model's and an earlier batch of that model has not passed its
  // update stage: then it waits (Unblock), so that it reads the state the
  // earlier one makes.
  void Start(uint64_t n);

  // Under mu_: `model`'s batch passed its update stage (or failed): its
  // next waiting batch starts.
  void Unblock(int model);

  // mu_, for a holder that does not let go through Finish (readers, the
  // failure detector, a failover's steps): once it lets go, batches that Run
  // queued meanwhile are taken in on the clock's timer — not on this
  // caller's thread, which may hold locks their answers need.
  class OtherLock {
   public:
    explicit OtherLock(const Impl* impl) : impl_(impl), lock_(impl->mu_) {}
    ~OtherLock() {
      lock_.unlock();
      if (impl_->incoming_any_.load()) {
        impl_->clock_->ScheduleAfter(
            0, [gate = impl_->gate_] { gate->Run([](Impl& impl) { impl.DrainIncoming(); }); });
      }
    }
    OtherLock(const OtherLock&) = delete;
    OtherLock& operator=(const OtherLock&) = delete;

   private:
    const Impl* const impl_;
    std::unique_lock<std::mutex> lock_;
  };

  Outside TakeOutside();

  // Without mu_, once a holder of it lets go: Deliver, then take in the
  // batches Run queued meanwhile.
  void Finish(Outside o);

  // Without mu_: hands the batches to the primary, gives the answers, then
  // makes the messages of the states of batches answered (NSPB's, which
  // QueueStates left until the answers had left), and has a remote
  // backup's transport send what was posted for it: those, and the request
  // manager's logs of the batches now computing (their outputs wait for
  // them: Advance). A local backup's link took them as they were posted.
  void Deliver(Outside o);

  // Runs a prepared batch on `exec` and waits for it.
  static ExecResult RunNow(Executor* exec, ExecBatch batch);

  void StartSpare();
  // The backup's states become the primary's; the logged batches whose
  // states it lacks, then every batch not answered, run again on `exec` in
  // order; then the batches that waited start.
  void Recover(std::unique_ptr<BackupState> backup, Executor* exec);
  // Under mu_: a standby takes over, on a thread of its own.
  void StartPromotionLocked();

  // Under mu_: the failure detector's next look (ReplicationOptions::
  // detect_after): a batch the primary has not answered that long after it
  // could start means the primary is dead; the failover runs on a thread of
  // its own.
  void ScheduleCheck();
  void Check();

  Clock* const clock_;
  const std::vector<SlotModel> models_;
  const ReplicationOptions options_;
  const replication::ModePolicy& policy_ = replication::PolicyOf(options_.mode);
  const ExecutorFactory spare_;

  mutable std::mutex mu_;
  // Batches Run had, for mu_'s next holder (DrainIncoming).
  std::mutex incoming_mu_;
  std::vector<Received> incoming_ ABSL_GUARDED_BY(incoming_mu_);
  std::atomic<bool> incoming_any_{false};
  std::atomic<int64_t> queued_batches_{0};  // ReplicationStats::queued_batches
  std::unique_ptr<Executor> primary_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Executor> backup_exec_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Executor>> dead_
      ABSL_GUARDED_BY(mu_);               // primaries that died: their threads finish unheard
  StateMap states_ ABSL_GUARDED_BY(mu_);  // the primary's
  absl::flat_hash_map<Key, uint64_t> audit_
      ABSL_GUARDED_BY(mu_);  // per sequence: the digest its last answer read
  absl::flat_hash_map<int, std::vector<float>> zeros_
      ABSL_GUARDED_BY(mu_);  // per stateful model: its start state
  absl::flat_hash_map<int, uint64_t> zero_digest_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by batch number: not yet answered
  // Batches committed, their states' messages not yet made (QueueStates):
  // each its keys in unshipped_keys_ [first, last) — erased or not — and
  // its answers' part. Their capacity is kept.
  struct Unshipped {
    uint64_t n = 0;
    size_t first = 0, last = 0;
    std::string answers;
  };
  std::vector<Unshipped> unshipped_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<Key, bool>> unshipped_keys_ ABSL_GUARDED_BY(mu_);
  // Stateful batches computed, before their update stage; those updated
  // whose answers wait for their states' acknowledgement.
  std::deque<uint64_t> computed_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> held_release_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> held_ ABSL_GUARDED_BY(mu_);  // received while recovering
  Outside outside_ ABSL_GUARDED_BY(mu_);             // for Finish()
  // Compute-then-update models: a batch is between its start and its update
  // stage; the batches waiting for it.
  absl::flat_hash_map<int, bool> model_busy_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, std::deque<uint64_t>> model_waiting_ ABSL_GUARDED_BY(mu_);
  uint64_t next_batch_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_committed_ ABSL_GUARDED_BY(mu_) = 0;  // the last batch past its update stage
  Time last_finished_ ABSL_GUARDED_BY(mu_) = 0;       // the primary's last batch (StampReceipt)
  uint64_t watermark_ ABSL_GUARDED_BY(mu_) = 0;       // delivered (acknowledged)
  uint64_t last_state_seq_ ABSL_GUARDED_BY(mu_) = 0;  // the last states shipped
  // A local link's next message is delivered then (Refresh).
  Time next_delivery_ ABSL_GUARDED_BY(mu_) = kInfiniteFuture;
  TimerId delivery_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;  // AwaitDelivery
  // The proxies' time outside mu_: the links' encoding, sending and (a
  // local backup's thread) applying.
  std::atomic<int64_t> outside_time_{0};
  int since_checkpoint_ ABSL_GUARDED_BY(mu_) = 0;
  int generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool recovering_ ABSL_GUARDED_BY(mu_) = false;
  // HangPrimary(): the primary hears nothing and says nothing.
  bool hung_ ABSL_GUARDED_BY(mu_) = false;
  Time hung_at_ ABSL_GUARDED_BY(mu_) = 0;
  TimerId check_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  // The detector's timers reach the slot through this, closed before the slot goes.
  const std::shared_ptr<TimerGate<Impl>> gate_ = std::make_shared<TimerGate<Impl>>(this);
  std::thread detector_;  // the failover the detector started
  Time kill_time_ ABSL_GUARDED_BY(mu_) = 0;
  Time next_sweep_ ABSL_GUARDED_BY(mu_) = 0;
  ReplicationStats stats_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Channel> channel_ ABSL_GUARDED_BY(mu_);
  // The message being made (Ship): one the link gave back, its buffers' capacity kept.
  std::unique_ptr<Outgoing> next_ ABSL_GUARDED_BY(mu_) = std::make_unique<Outgoing>();
  mutable std::mutex backup_mu_;
  std::unique_ptr<BackupState> backup_ ABSL_GUARDED_BY(backup_mu_);
  std::thread spare_thread_;
  // Distributed mode: a standby until promoted; the batches that came
  // during the takeover; the answers kept for requests that come again.
  bool standby_ ABSL_GUARDED_BY(mu_) = false;
  bool promoting_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Received> deferred_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Kept> kept_ ABSL_GUARDED_BY(mu_);
  // Long past the frontends' orphan grace: the requests of the dead primary
  // have come again by then.
  static constexpr Duration kKeepAnswersFor = 30 * kSecond;
  Time kept_until_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> promoters_;
};

}  // namespace tutti

#endif  // TUTTI_REPLICATION_REPLICATED_EXECUTOR_IMPL_H_
