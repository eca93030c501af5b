#include "tutti/distributed/slot_assignment.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace tutti {

std::vector<std::string> AssignSlots(const std::vector<int>& groups, const std::vector<std::string>& holders,
                                     const std::vector<SlotMember>& members) {
  absl::flat_hash_map<std::string, int> group_of;
  for (const SlotMember& m : members) group_of[m.id] = m.group;
  std::vector<std::string> out(groups.size());
  absl::flat_hash_set<std::string> placed;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto it = group_of.find(holders[g]);
    if (it != group_of.end() && it->second == groups[g] && placed.insert(holders[g]).second) out[g] = holders[g];
  }
  std::vector<const SlotMember*> waiting;
  for (const SlotMember& m : members) {
    if (!placed.contains(m.id)) waiting.push_back(&m);
  }
  std::sort(waiting.begin(), waiting.end(), [](const SlotMember* a, const SlotMember* b) {
    return a->joined != b->joined ? a->joined < b->joined : a->id < b->id;
  });
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!out[g].empty()) continue;
    auto it = std::find_if(waiting.begin(), waiting.end(), [&](const SlotMember* m) { return m->group == groups[g]; });
    if (it == waiting.end()) continue;
    out[g] = (*it)->id;
    waiting.erase(it);
  }
  return out;
}

}  // namespace tutti
