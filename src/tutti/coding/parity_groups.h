// ParityGroups: ParM's coding-group bookkeeping for one deployed model, kept
// by the frontend (ParM, SOSP 2019 §3–4). It holds no clock and no threads:
// the owner (serving/inference_core) feeds it events and acts on its answers.
//
// Batches of the deployed model join coding groups of k in dispatch order.
// When the k-th batch joins, the group's parity queries are encoded position
// by position: parity query p combines the p-th query of every batch of the
// group that has one (coding/parity_codec.h). The owner sends them to the
// parity model; each parity output comes back through OnParityDone (or
// OnParityLost when it was dropped or failed).
//
// Decoding: at position p, when the parity output is in and exactly one
// batch's original output is missing, that prediction can be rebuilt —
// F_P(P_p) minus the others — and is offered as a Reconstruction. The owner
// claims it (now, or after a delay of its choosing) with Claim(), which
// succeeds only while the position is unanswered. Every position is answered
// once: by its original (OnBatchDone says deliver) or by a claimed
// reconstruction, after which the late original is discarded; a parity
// output that arrives when nothing at its position is missing is dropped.
// A failed batch's positions wait for a reconstruction while one is still
// possible and are otherwise reported as failures to answer with the error.
//
// Not thread-safe: the owner serializes calls.
#ifndef TUTTI_CODING_PARITY_GROUPS_H_
#define TUTTI_CODING_PARITY_GROUPS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "tutti/coding/parity_codec.h"

namespace tutti {

class ParityGroups {
 public:
  using BatchKey = uint64_t;
  using GroupId = uint64_t;

  struct Dispatched {
    BatchKey batch = 0;
    GroupId group = 0;
    // Non-empty when this batch completed its group: the parity query of each
    // position (codec item_elements() values each), position 0 first.
    std::vector<std::vector<float>> parity_queries;
  };
  struct Reconstruction {
    BatchKey batch = 0;
    int position = 0;
    std::vector<float> output;  // output_elements values
  };
  struct Position {
    BatchKey batch = 0;
    int position = 0;
  };
  // What an event made possible.
  struct Events {
    std::vector<Reconstruction> reconstructions;  // offer; Claim() before answering
    std::vector<Position> failures;               // answer with the batch's error now
  };
  struct Stats {
    int64_t groups = 0;               // coding groups completed (parity encoded)
    int64_t reconstructions = 0;      // claimed
    int64_t discarded_originals = 0;  // originals that came after their reconstruction
    int64_t dropped_parities = 0;     // parity outputs nobody needed
    int64_t lost_parities = 0;        // parity queries dropped or failed
  };

  ParityGroups(ParityCodec codec, int64_t output_elements);

  // A batch of `size` (>= 1) queries was dispatched; `inputs` holds size ×
  // item_elements() values.
  Dispatched AddBatch(int size, absl::Span<const float> inputs);
  // The same under the owner's key for the batch (unique; the owner keys
  // every batch itself or none).
  Dispatched AddBatch(BatchKey batch, int size, absl::Span<const float> inputs);

  // The batch's outputs (size × output_elements values) arrived. Returns, per
  // position, whether to deliver the original (false: a reconstruction
  // answered it already). `events` receives what the outputs made possible.
  std::vector<bool> OnBatchDone(BatchKey batch, absl::Span<const float> outputs, Events* events);
  // The batch failed; its positions are reconstructed if they still can be,
  // or reported in `events->failures`.
  void OnBatchFailed(BatchKey batch, Events* events);

  void OnParityDone(GroupId group, int position, absl::Span<const float> output, Events* events);
  void OnParityLost(GroupId group, int position, Events* events);

  // Takes a reconstruction offered earlier: true iff its position was still
  // unanswered (it is now answered by the reconstruction).
  bool Claim(BatchKey batch, int position);

  const Stats& stats() const { return stats_; }
  // Groups and batches still tracked (for tests: nothing leaks).
  size_t tracked_groups() const { return groups_.size(); }
  size_t tracked_batches() const { return batches_.size(); }

 private:
  enum class Slot : uint8_t { kPending, kOriginal, kReconstructed, kFailedWaiting, kFailed };
  enum class Parity : uint8_t { kNone, kPending, kIn, kLost };
  struct BatchState {
    GroupId group = 0;
    int size = 0;
    bool done = false;    // outputs in
    bool failed = false;
    std::vector<Slot> slots;
    std::vector<bool> offered;  // a reconstruction was offered for the position
    std::vector<float> inputs;  // kept until the group is full
    std::vector<float> outputs;
  };
  struct Group {
    std::vector<BatchKey> batches;
    bool full = false;
    std::vector<Parity> parity;  // per position, once full
    std::vector<std::vector<float>> parity_out;
  };

  static bool Unanswered(Slot s) { return s == Slot::kPending || s == Slot::kFailedWaiting; }
  bool AnyUnanswered(const Group& g, int position) const;
  // Offers a reconstruction or reports failures at `position` of `group`
  // where that became possible, then forgets the group if it is finished.
  void Resolve(GroupId id, int position, Events* events);
  void MaybeForget(GroupId id);

  const ParityCodec codec_;
  const int64_t output_elements_;
  absl::flat_hash_map<GroupId, Group> groups_;
  absl::flat_hash_map<BatchKey, BatchState> batches_;
  GroupId open_group_ = 0;  // the group new batches join; 0: none yet
  GroupId next_group_ = 1;
  BatchKey next_batch_ = 1;
  Stats stats_;
};

}  // namespace tutti

#endif  // TUTTI_CODING_PARITY_GROUPS_H_
