// What a slot's backup holds (replicated_executor.h), and how it applies
// the primary's messages (state_message.h). Internal to replication/.
#ifndef TUTTI_REPLICATION_BACKUP_STATE_H_
#define TUTTI_REPLICATION_BACKUP_STATE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "tutti/replication/state_message.h"

namespace tutti::replication {

// An answer the backup keeps for a request it may be asked again after a
// failover (distributed mode: its primary died before the answer left).
struct Kept {
  std::vector<float> output;
  absl::Status status;
};

// What the backup holds: the states it applied, in order, the logged
// batches whose states it has not, per sequence the digest of the state its
// last logged request read (for the audit), and the answers of the batches
// whose states it applied, by tag (at most kKeptAnswers, oldest out first).
struct BackupState {
  static constexpr size_t kKeptAnswers = 1 << 16;
  StateMap states;
  std::map<uint64_t, Logged> log;
  absl::flat_hash_map<Key, uint64_t> reads;
  absl::flat_hash_map<uint64_t, Kept> answers;
  std::deque<uint64_t> answer_order;
  uint64_t applied = 0;  // the last batch whose states (or checkpoint) it applied

  // Keeps the answer of request `tag` (0: none to keep).
  void Keep(uint64_t tag, Kept kept);
  // Applies one message's bytes (Encode), in order.
  void Apply(const std::string& bytes);
};

}  // namespace tutti::replication

#endif  // TUTTI_REPLICATION_BACKUP_STATE_H_
