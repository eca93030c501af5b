#include "tutti/scheduler/memory_ledger.h"

#include <algorithm>
#include <numeric>

namespace tutti {

MemoryLedger::MemoryLedger(const ClusterSpec& spec)
    : spec_(spec), held_(spec.num_gpus()), bytes_(spec.num_gpus(), 0) {}

void MemoryLedger::Loaded(const Load& load) {
  auto& held = held_[load.gpu];
  for (ModelId m : load.evicted) {
    auto it = held.find(m);
    if (it == held.end() || it->second.busy_until > load.start) ++breaches_;
    if (it == held.end()) continue;
    held.erase(it);
    bytes_[load.gpu] -= spec_.models[m].weights_bytes;
  }
  if (held.contains(load.model)) ++breaches_;
  held[load.model] = {load.start + load.duration, 0};
  bytes_[load.gpu] += spec_.models[load.model].weights_bytes;
  if (bytes_[load.gpu] > spec_.memory.gpu_bytes) ++breaches_;
}

void MemoryLedger::Ran(GpuId gpu, ModelId model, Time start, Time end) {
  auto it = held_[gpu].find(model);
  if (it == held_[gpu].end() || it->second.ready > start) {
    ++breaches_;
    return;
  }
  it->second.busy_until = std::max(it->second.busy_until, end);
}

int64_t MemoryLedger::total_bytes() const { return std::accumulate(bytes_.begin(), bytes_.end(), int64_t{0}); }

}  // namespace tutti
