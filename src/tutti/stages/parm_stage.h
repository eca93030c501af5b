// ParmStage: ParM coded serving (ParM, SOSP 2019) for one deployed model, as
// a batch stage (serving/batch_stage.h) of any host that serves it.
//
// The deployed model's dispatched batches join coding groups of k
// (coding/parity_groups.h); when a group is full, its parity queries go to
// the parity model as internal requests due at the group's earliest
// deadline. A request whose batch is slow (or failed) is answered with a
// reconstruction, F_P(P) − Σ others, marked `reconstructed`, as soon as the
// other k−1 outputs and the parity output are in — or `reconstruct_delay`
// later, if its original has not come by then (a failed batch's at once).
// The late original is then discarded; a parity output nobody needs is
// dropped; a request of a failed batch that cannot be rebuilt is answered
// with the batch's error.
//
// Thread-safety: as BatchStage (the host serializes every call).
#ifndef TUTTI_STAGES_PARM_STAGE_H_
#define TUTTI_STAGES_PARM_STAGE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tutti/coding/parity_codec.h"
#include "tutti/coding/parity_groups.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/serving/batch_stage.h"

namespace tutti {

// ParM for one model: its batches are protected by `parity_model`, whose
// queries `codec` encodes (input sizes must match both models').
struct ParmCoding {
  ModelId model = 0;
  ModelId parity_model = 0;
  ParityCodec codec;
  Duration reconstruct_delay = 0;  // wait this long for the original first
};

class ParmStage final : public BatchStage {
 public:
  ParmStage(const ParmCoding& coding, int64_t output_elements);

  void OnDispatch(const Dispatched& batch, StageHost& host) override;
  std::vector<bool> OnExecuted(uint64_t batch, int size, const ExecResult& result, StageHost& host) override;
  // group (coding groups encoded), discarded_original, dropped_parity,
  // lost_parity; reconstructions are the host's `reconstructed` count.
  std::vector<std::pair<std::string, int64_t>> EventCounts() const override;

  const ParityGroups& groups() const { return groups_; }

 private:
  void OnParityOutcome(ParityGroups::GroupId group, int position, const InferenceOutcome& outcome, StageHost& host);
  // Acts on what a coding event made possible.
  void Handle(ParityGroups::Events events, bool emulated, StageHost& host);
  void AnswerReconstruction(const ParityGroups::Reconstruction& r, bool emulated, StageHost& host);
  // One of a failed batch's items was answered by the stage.
  void AnsweredFailed(uint64_t batch);

  const ModelId parity_model_;
  const Duration reconstruct_delay_;
  ParityGroups groups_;
  Time open_group_deadline_ = kInfiniteFuture;  // earliest deadline in the group being filled
  struct Failed {
    absl::Status error;
    int unanswered = 0;
  };
  absl::flat_hash_map<uint64_t, Failed> failed_;  // failed batches with items still to answer
};

// The stages of `codings` for a host serving `spec` with `shapes` (by
// model id): one per coded model.
// Errors: unknown model ids, a model coded twice or both coded and a parity
// model, or a parity model and codec whose sizes do not match the model's.
absl::StatusOr<std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>>> MakeParmStages(
    const ClusterSpec& spec, const std::vector<ModelShape>& shapes, const std::vector<ParmCoding>& codings);

}  // namespace tutti

#endif  // TUTTI_STAGES_PARM_STAGE_H_
