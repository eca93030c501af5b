#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/prometheus.h"
#include "tutti/replication/replicated_executor.h"

namespace tutti {

std::string ReplicationPrometheusText(const std::vector<const ReplicatedExecutor*>& slots) {
  if (slots.empty()) return "";
  struct Metric {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const ReplicationStats&)> value;
  };
  const Metric metrics[] = {
      {"tutti_replication_failovers_total", "counter", "Failovers: the backup became the primary.",
       [](const ReplicationStats& s) { return static_cast<double>(s.failovers); }},
      {"tutti_replication_last_failover_seconds", "gauge",
       "The last failover: from its start to the new primary's first answer.",
       [](const ReplicationStats& s) { return ToSeconds(s.failover_time); }},
      {"tutti_replication_last_detection_seconds", "gauge",
       "The last failure the detector found: from the hang to its detection.",
       [](const ReplicationStats& s) { return ToSeconds(s.detection_time); }},
      {"tutti_replication_sent_bytes_total", "counter",
       "Bytes to the backup: logged inputs, states, checkpoints.",
       [](const ReplicationStats& s) { return static_cast<double>(s.state_bytes + s.log_bytes); }},
      {"tutti_replication_held_batches_total", "counter",
       "Stateful batches whose answers waited for the backup.",
       [](const ReplicationStats& s) { return static_cast<double>(s.held_batches); }},
      {"tutti_replication_lost_states_total", "counter",
       "Items answered with an error because their state died.",
       [](const ReplicationStats& s) { return static_cast<double>(s.lost_states); }},
      {"tutti_replication_inconsistent_total", "counter",
       "Answers that read a state not descended from their sequence's previous answer's (the "
       "audit).",
       [](const ReplicationStats& s) { return static_cast<double>(s.inconsistent); }},
      {"tutti_replication_states", "gauge",
       "States the primary holds (sequences, or the model's own).",
       [](const ReplicationStats& s) { return static_cast<double>(s.live_states); }},
      {"tutti_replication_backup_ready", "gauge", "1 while a backup stands by.",
       [](const ReplicationStats& s) { return s.backup ? 1.0 : 0.0; }},
      {"tutti_replication_link_peak_bytes", "gauge",
       "The most bytes posted to an in-process backup and not yet applied (bounded at 64 MiB).",
       [](const ReplicationStats& s) { return static_cast<double>(s.link_peak_bytes); }},
  };
  std::vector<ReplicationStats> stats;
  for (const ReplicatedExecutor* slot : slots) stats.push_back(slot->stats());
  std::string out;
  for (const Metric& m : metrics) {
    out += PromFamily(m.name, m.type, m.help);
    for (size_t i = 0; i < slots.size(); ++i) {
      absl::StrAppend(&out, m.name, "{slot=\"", i, "\",mode=\"",
                      ReplicationModeName(slots[i]->mode()), "\"} ",
                      absl::StrFormat("%.9g", m.value(stats[i])), "\n");
    }
  }
  return out;
}

}  // namespace tutti
