// ReplicatedExecutor: an execution slot whose stateful models keep their
// state with a primary and a backup — HAMS's proxies for one executor and
// its replica, in one of four modes (ReplicationMode: none, nspb, remus,
// checkpoint). A stateful model runs on the base executors in its
// stateless form (each item's input followed by its sequence's state, its
// output by the new state); the slot keeps the states by sequence, ships
// them to the backup as its mode says, and on a failover (KillPrimary, the
// failure detector, or Promote() in distributed mode) the backup reruns
// what it lacks and serves: every request is answered once, and every
// output reads a state descended from the one its sequence's previous
// output read (the consistency audit counts any that does not). The
// design — modes, failover, distributed mode, the lock and the link — is
// in docs/architecture/replication.md.
//
// Thread-safety: as Executor; every other method from any thread.
#ifndef TUTTI_REPLICATION_REPLICATED_EXECUTOR_H_
#define TUTTI_REPLICATION_REPLICATED_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"

namespace tutti {

enum class ReplicationMode { kNone, kNspb, kRemus, kCheckpoint };
absl::StatusOr<ReplicationMode> ParseReplicationMode(absl::string_view name);  // none | nspb | remus | checkpoint
absl::string_view ReplicationModeName(ReplicationMode mode);

// A model the slot holds, by its position (ExecBatch::model).
struct SlotModel {
  int64_t state_elements = 0;   // 0: stateless
  int64_t input_elements = 0;   // as served: without the state
  int64_t output_elements = 0;
  Duration max_idle = 0;        // a sequence idle this long is forgotten
  // A compute-then-update model: one state, the model's own (ExecBatch::
  // state; empty at first: the executor's loaded weights), which every item
  // of a batch reads and the batch's update replaces.
  bool model_state = false;
};

struct ReplicationOptions {
  ReplicationMode mode = ReplicationMode::kNspb;
  int checkpoint_every = 100;  // stateful batches between checkpoints (kCheckpoint)
  // > 0: the failure detector — a batch the primary has not answered this
  // long after it could start means the primary is dead: the backup takes
  // over (as KillPrimary). Checked every quarter of it on the clock.
  Duration detect_after = 500 * kMillisecond;
  bool distributed = false;  // the backup is another process's slot (see above); detect_after unused
  // A backup in this process: the link's round trip — a message sent at t
  // is in the backup's memory, and the primary knows it, at t + link_rtt
  // (a one-sided write; the backup's proxy applies it later, off the
  // primary's path). 0: shared memory. A remote backup acknowledges what
  // it applied instead.
  Duration link_rtt = 0;
};

struct ReplicationStats {
  int64_t stateful_batches = 0;
  int64_t messages = 0;        // to the backup: logs, states, checkpoints
  int64_t state_bytes = 0;     // of states and checkpoints
  int64_t log_bytes = 0;       // of logged inputs
  Duration proxy_time = 0;     // the proxies' time in their own work: states in and out of
                               // batches, digests, encoding and applying messages (all
                               // threads; a monotonic clock around that work)
  int64_t held_batches = 0;    // whose outputs waited for the backup
  Duration held_time = 0;      // how long, in all
  Duration release_time = 0;   // stateful batches, in all: from the primary's answer to the batch's
                               // release (its update stage, and any wait for the backup)
  int64_t failovers = 0;
  Duration failover_time = 0;  // the last: from the kill (or its detection) to the new primary's first answer
  Duration detection_time = 0; // the last the detector found: from the hang to its detection
  int64_t queued_batches = 0;  // whose Run found the slot's lock held through its spin: taken
                               // in by another thread (the lock's holder, once it let go)
  int64_t rerun_batches = 0;   // run again at the new primary
  int64_t lost_states = 0;     // items answered with an error: their state died
  int64_t audited = 0;         // answered items of sequences checked by the audit
  int64_t inconsistent = 0;    // of those, reading a state not descended from the previous answer's
  bool backup = false;          // a backup stands by (after a failover: once the spare is up)
  int64_t live_states = 0;     // at the primary
  int64_t backup_states = 0;
  int64_t link_peak_bytes = 0; // a backup in this process: the most bytes (encoded) posted to it and
                               // not yet applied, on its current link — at most 256 messages and
                               // 64 MiB, or one message when a single one is larger
};

class ReplicatedExecutor final : public Executor {
 public:
  using ExecutorFactory = std::function<absl::StatusOr<std::unique_ptr<Executor>>()>;
  // Sends message `seq` (1, 2, … per backup) to a backup in another process.
  using SendFn = std::function<void(uint64_t seq, std::string body)>;

  // `primary` and `backup` hold the same models, stateful ones in their
  // stateless form (models[i] describes model i). In mode none the backup
  // keeps no state; it only takes over. `backup` may be null: then a
  // failure has nothing to promote. `spare`, if set, makes the next backup after a failover.
  // `clock` must outlive this.
  ReplicatedExecutor(Clock* clock, std::unique_ptr<Executor> primary, std::unique_ptr<Executor> backup,
                     std::vector<SlotModel> models, ReplicationOptions options, ExecutorFactory spare = nullptr);
  ~ReplicatedExecutor() override;

  void Run(ExecBatch batch, DoneFn done) override;
  std::string kind() const override;

  // The primary dies now (fault injection); returns once the backup serves
  // in its place. FailedPrecondition when there is no backup to promote.
  absl::Status KillPrimary();
  // The primary stops answering, unannounced (fault injection: a hung or
  // cut-off primary); the failure detector must find it.
  void HangPrimary();
  ReplicationStats stats() const;
  ReplicationMode mode() const;

  // ---- distributed mode ----
  // As the primary: ship to a new backup through `send` from now on (its
  // first message: a checkpoint of the states committed so far), replacing
  // any other.
  void AttachBackup(SendFn send);
  // The backup applied every message up to `seq`.
  void OnBackupApplied(uint64_t seq);
  // The backup is gone: serve unreplicated; outputs waiting for it leave.
  void DetachBackup();
  // As a standby: a new primary streams to it (what an earlier one sent is
  // dropped; false, and nothing done, when it is no standby); then its
  // messages, in order. Once promoted they are ignored: false.
  bool BeginFromPrimary();
  bool ApplyFromPrimary(const std::string& body);
  // Take over as the primary (no-op if it is one); the takeover runs on a
  // thread of its own, and batches wait for it.
  void Promote();
  // Back to a standby (the scheduler gave the slot to another, or its
  // backup took over): its states go, and the batches it has not answered
  // are answered with an error (Unavailable) — none with an output the new
  // primary's states may not follow.
  void Demote();
  // Promoted, and the takeover done.
  bool serving() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Prometheus text of the slots' figures (`slots[i]` is labelled slot="i"):
// tutti_replication_* counters and gauges.
std::string ReplicationPrometheusText(const std::vector<const ReplicatedExecutor*>& slots);

}  // namespace tutti

#endif  // TUTTI_REPLICATION_REPLICATED_EXECUTOR_H_
