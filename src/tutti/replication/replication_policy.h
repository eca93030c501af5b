// What each replication mode makes a slot do (replicated_executor.h): one
// policy object per mode, which the slot reads instead of asking which
// mode it runs. HAMS's NSPB and the baselines it is measured against:
//   none        the backup keeps nothing; it only takes over (states die);
//   remus       each batch's states ship as it commits; its answers wait
//               for the backup's acknowledgement (stop-and-buffer);
//   nspb        the request manager logs each stateful batch's inputs as it
//               starts; its update stage waits for that log and for the
//               states it read, and its states ship once its answers left;
//   checkpoint  inputs logged as nspb, every state shipped each
//               `checkpoint_every` batches; a takeover replays the log.
// Internal to replication/.
#ifndef TUTTI_REPLICATION_REPLICATION_POLICY_H_
#define TUTTI_REPLICATION_REPLICATION_POLICY_H_

#include "tutti/replication/replicated_executor.h"

namespace tutti::replication {

struct ModePolicy {
  const char* name;  // as ParseReplicationMode reads it
  bool
      keeps_states;  // the backup holds states: a new one gets a checkpoint, a takeover adopts them
  bool logs_inputs;  // stateful batches' inputs go to the backup's log as they start
  bool update_waits_for_reads;  // the update stage waits for the states it read, besides its log
  bool ships_states;            // each batch's states ship as it commits
  bool ships_after_answers;     // … their message made once the batch's answers have left
  bool holds_answers;           // answers wait until their states are acknowledged
  bool checkpoints;             // every state ships each `checkpoint_every` batches
};

// The policy object of `mode`.
const ModePolicy& PolicyOf(ReplicationMode mode);

}  // namespace tutti::replication

#endif  // TUTTI_REPLICATION_REPLICATION_POLICY_H_
