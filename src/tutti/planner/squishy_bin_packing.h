// Nexus's squishy bin packing (Nexus §6.1, Algorithm 1): packs sessions
// (model, latency SLO, request rate) onto GPU nodes, each of which cycles
// through its sessions at their batch sizes within a duty cycle.
//
//   saturate: B = max b with 2ℓ(b) <= SLO; T = B/ℓ(B); ⌊R/T⌋ whole GPUs
//             run the session alone at batch B; the rest r = R − n·T is
//             residual (if even the residual needs more than one GPU at
//             any batch its SLO allows, it gets one more whole GPU). A
//             session with 2ℓ(1) > SLO has no such bound; it gets whole GPUs
//             at B = 1, best effort.
//   residual: b = max b with ℓ(b) + b/r <= SLO, duty cycle d = b/r,
//             occupancy ℓ(b)/d; sorted by occupancy, each residual is merged
//             best-fit (highest resulting occupancy) into an existing node:
//             the merged duty cycle is the smaller one, every session's batch
//             becomes ⌈d·r⌉, and the merge fits if Σℓ(b_i) <= d and every
//             session still has d + ℓ(b_i) <= its SLO.
//
// A pure function of its input: the planner runs it every epoch and the
// simulator can replay it.
#ifndef TUTTI_PLANNER_SQUISHY_BIN_PACKING_H_
#define TUTTI_PLANNER_SQUISHY_BIN_PACKING_H_

#include <vector>

#include "tutti/core/latency_profile.h"

namespace tutti {

struct Session {
  int model = 0;                          // caller's id for the model
  const LatencyProfile* profile = nullptr;  // not owned; must outlive the call
  Duration slo = 0;
  double rate = 0;                        // requests/s
};

struct NodeSession {
  int model = 0;
  int batch = 0;
  double rate = 0;  // the part of the session's rate this node is planned for
};

struct GpuNode {
  Duration duty_cycle = 0;
  std::vector<NodeSession> sessions;
  double occupancy = 0;  // Σ ℓ(b_i) / duty_cycle
  bool saturated = false;
};

// Packs `sessions` (rates > 0) into GPU nodes: saturated nodes first, then
// the residual nodes. A session whose SLO cannot fit even a batch of one
// (ℓ(1) > SLO) gets no node.
std::vector<GpuNode> SquishyBinPack(const std::vector<Session>& sessions);

}  // namespace tutti

#endif  // TUTTI_PLANNER_SQUISHY_BIN_PACKING_H_
