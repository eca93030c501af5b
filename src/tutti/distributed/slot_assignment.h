// Slot assignment: which backend runs each GPU slot of the cluster's layout,
// as a pure function of a membership snapshot — so that the leading
// scheduler places backends the same way whatever order its messages came
// in, and a test can check placement without a node.
#ifndef TUTTI_DISTRIBUTED_SLOT_ASSIGNMENT_H_
#define TUTTI_DISTRIBUTED_SLOT_ASSIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tutti {

struct SlotMember {
  std::string id;
  int group = 0;        // the executor group it serves
  uint64_t joined = 0;  // join order: smaller joined earlier
};

// `groups[g]`: the executor group of GPU slot g; `holders[g]`: the backend
// holding it now ("" : none). Returns the holder of every slot: a slot
// keeps its holder while that holder is a member of the slot's group; each
// other slot, in slot order, goes to the earliest-joined member of its
// group that holds none ("" when there is none). Members left over are
// spares. REQUIRES: holders.size() == groups.size(); member ids unique.
std::vector<std::string> AssignSlots(const std::vector<int>& groups, const std::vector<std::string>& holders,
                                     const std::vector<SlotMember>& members);

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_SLOT_ASSIGNMENT_H_
