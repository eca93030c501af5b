// ReplicaNode: a stateful group's backend in distributed mode, as HAMS's
// primary-backup pair sees it (HAMS §III): it carries the
// messages of its ReplicatedExecutor (replication/replicated_executor.h)
// between two backend processes on the replica stream (distributed/
// links.h), and follows the role the leading scheduler gives it.
//
//   - Told it holds its slot (the leader's Role): its slot takes over as
//     the primary (Promote(): a backup whose primary died reruns what it
//     lacks). Told its backup's address: it opens a replica stream there
//     and ships to it from then on (AttachBackup); when that stream ends,
//     it serves unreplicated until it is given another (DetachBackup).
//   - Not holding its slot: it stands by (Demote(), if it was the
//     primary). A primary that opens a replica stream to it gets its states
//     applied in order and acknowledged (ReplicaUp), until it is promoted;
//     from then on it answers `promoted`, and a primary told so stands down
//     (Demote: a hung primary that wakes up answers nothing its states made).
//     A stream that comes while it still serves as a primary (the leader
//     has not yet told it to stand down) is refused; its opener tries again
//     every kRetryAfter while the role names this backup.
//
// Thread-safety: every method may be called from any thread; the streams'
// handlers run on their transport's thread.
#ifndef TUTTI_DISTRIBUTED_REPLICA_NODE_H_
#define TUTTI_DISTRIBUTED_REPLICA_NODE_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "tutti/core/clock.h"
#include "tutti/core/timer_gate.h"
#include "tutti/distributed/links.h"
#include "tutti/replication/replicated_executor.h"

namespace tutti {

class ReplicaNode {
 public:
  // `slot` (in distributed mode), `connector` and `clock` must outlive the node.
  ReplicaNode(ReplicatedExecutor* slot, Connector* connector, Clock* clock)
      : slot_(slot), connector_(connector), clock_(clock) {}
  // Closes its streams and waits for their handlers' last call (their
  // transport must still be running).
  ~ReplicaNode();

  // The leader's word (BackendDown.role).
  void OnRole(const internal::Role& role);
  // A primary opened a replica stream to this backend.
  std::optional<ReplicaPeerHandlers> AcceptReplica(std::shared_ptr<ReplicaPeer> link);

 private:
  static constexpr Duration kRetryAfter = 100 * kMillisecond;

  void ConnectBackup();  // (again) to backup_, and ships to it
  void OnBackupGone(uint64_t epoch);
  void Retry();

  ReplicatedExecutor* const slot_;
  Connector* const connector_;
  Clock* const clock_;
  StreamTracker streams_;

  std::mutex mu_;
  bool holds_slot_ ABSL_GUARDED_BY(mu_) = false;
  std::string backup_ ABSL_GUARDED_BY(mu_);  // its address; "": none
  std::shared_ptr<ReplicaLink> to_backup_ ABSL_GUARDED_BY(mu_);
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // +1 per stream to a backup
  TimerId retry_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The retry timer reaches the node through this, closed before the node goes.
  const std::shared_ptr<TimerGate<ReplicaNode>> gate_ = std::make_shared<TimerGate<ReplicaNode>>(this);
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_REPLICA_NODE_H_
