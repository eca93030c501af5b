// MemoryLedger: the memory contract of a scheduler's loads (request.h's
// Load), checked as its decisions are carried out — by the simulator's
// emulated cluster and by tests. The contract: a batch runs only on a GPU
// that holds its model, from the end of the model's load there; a load
// evicts only models held there whose batches have all ended by its
// start, copies in a model not held there, and leaves the GPU within its
// budget (ClusterSpec::memory). Each breach is counted, never fatal.
#ifndef TUTTI_SCHEDULER_MEMORY_LEDGER_H_
#define TUTTI_SCHEDULER_MEMORY_LEDGER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/scheduler/cluster_spec.h"

namespace tutti {

class MemoryLedger {
 public:
  // `spec` must outlive the ledger. Every GPU starts holding nothing.
  explicit MemoryLedger(const ClusterSpec& spec);

  void Loaded(const Load& load);
  // A batch of `model` ran on `gpu` over [start, end).
  void Ran(GpuId gpu, ModelId model, Time start, Time end);

  int64_t breaches() const { return breaches_; }
  int64_t held_bytes(GpuId gpu) const { return bytes_[gpu]; }
  int64_t total_bytes() const;

 private:
  struct Held {
    Time ready = 0;       // its load ends
    Time busy_until = 0;  // its last batch ends
  };
  const ClusterSpec& spec_;
  std::vector<absl::flat_hash_map<ModelId, Held>> held_;  // per GPU: the models loaded or loading
  std::vector<int64_t> bytes_;                            // per GPU
  int64_t breaches_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_MEMORY_LEDGER_H_
