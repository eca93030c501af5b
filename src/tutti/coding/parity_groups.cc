#include "tutti/coding/parity_groups.h"

#include <algorithm>
#include <utility>

namespace tutti {

ParityGroups::ParityGroups(ParityCodec codec, int64_t output_elements)
    : codec_(std::move(codec)), output_elements_(output_elements) {}

ParityGroups::Dispatched ParityGroups::AddBatch(int size, absl::Span<const float> inputs) {
  return AddBatch(next_batch_++, size, inputs);
}

ParityGroups::Dispatched ParityGroups::AddBatch(BatchKey batch, int size, absl::Span<const float> inputs) {
  if (open_group_ == 0) {
    open_group_ = next_group_++;
    groups_[open_group_];
  }
  Dispatched d;
  d.batch = batch;
  d.group = open_group_;
  Group& g = groups_[open_group_];
  g.batches.push_back(d.batch);
  BatchState& b = batches_[d.batch];
  b.group = open_group_;
  b.size = size;
  b.slots.assign(size, Slot::kPending);
  b.offered.assign(size, false);
  b.inputs.assign(inputs.begin(), inputs.end());
  if (static_cast<int>(g.batches.size()) < codec_.k()) return d;

  // The group is full: encode its parity queries, position by position.
  g.full = true;
  open_group_ = 0;
  ++stats_.groups;
  int positions = 0;
  for (BatchKey k : g.batches) positions = std::max(positions, batches_[k].size);
  g.parity.assign(positions, Parity::kPending);
  g.parity_out.resize(positions);
  const int64_t in = codec_.item_elements();
  std::vector<const float*> items(g.batches.size());
  for (int p = 0; p < positions; ++p) {
    for (size_t i = 0; i < g.batches.size(); ++i) {
      const BatchState& m = batches_[g.batches[i]];
      items[i] = p < m.size ? m.inputs.data() + p * in : nullptr;
    }
    std::vector<float> query(in);
    codec_.Encode(items, query.data());
    d.parity_queries.push_back(std::move(query));
  }
  for (BatchKey k : g.batches) std::vector<float>().swap(batches_[k].inputs);
  return d;
}

std::vector<bool> ParityGroups::OnBatchDone(BatchKey key, absl::Span<const float> outputs, Events* events) {
  auto it = batches_.find(key);
  if (it == batches_.end()) return {};
  BatchState& b = it->second;
  b.done = true;
  b.outputs.assign(outputs.begin(), outputs.end());
  std::vector<bool> deliver(b.size);
  for (int p = 0; p < b.size; ++p) {
    if (b.slots[p] == Slot::kPending) {
      b.slots[p] = Slot::kOriginal;
      deliver[p] = true;
    } else {
      ++stats_.discarded_originals;
    }
  }
  const GroupId group = b.group;
  const int size = b.size;
  for (int p = 0; p < size; ++p) Resolve(group, p, events);
  MaybeForget(group);
  return deliver;
}

void ParityGroups::OnBatchFailed(BatchKey key, Events* events) {
  auto it = batches_.find(key);
  if (it == batches_.end()) return;
  BatchState& b = it->second;
  b.failed = true;
  for (Slot& s : b.slots) {
    if (s == Slot::kPending) s = Slot::kFailedWaiting;
  }
  const GroupId group = b.group;
  for (int p = 0; p < b.size; ++p) Resolve(group, p, events);
  MaybeForget(group);
}

void ParityGroups::OnParityDone(GroupId id, int position, absl::Span<const float> output, Events* events) {
  auto it = groups_.find(id);
  if (it == groups_.end() || position >= static_cast<int>(it->second.parity.size())) {
    ++stats_.dropped_parities;  // every original of the group was answered already
    return;
  }
  Group& g = it->second;
  g.parity[position] = Parity::kIn;
  g.parity_out[position].assign(output.begin(), output.end());
  if (AnyUnanswered(g, position)) {
    Resolve(id, position, events);
  } else {
    ++stats_.dropped_parities;  // every original at this position came first
  }
  MaybeForget(id);
}

void ParityGroups::OnParityLost(GroupId id, int position, Events* events) {
  ++stats_.lost_parities;
  auto it = groups_.find(id);
  if (it == groups_.end() || position >= static_cast<int>(it->second.parity.size())) return;
  it->second.parity[position] = Parity::kLost;
  Resolve(id, position, events);
  MaybeForget(id);
}

bool ParityGroups::Claim(BatchKey key, int position) {
  auto it = batches_.find(key);
  if (it == batches_.end() || position >= it->second.size) return false;
  BatchState& b = it->second;
  Slot& s = b.slots[position];
  if (!Unanswered(s)) return false;
  s = Slot::kReconstructed;
  ++stats_.reconstructions;
  MaybeForget(b.group);
  return true;
}

bool ParityGroups::AnyUnanswered(const Group& g, int position) const {
  for (BatchKey k : g.batches) {
    const BatchState& b = batches_.at(k);
    if (position < b.size && Unanswered(b.slots[position])) return true;
  }
  return false;
}

void ParityGroups::Resolve(GroupId id, int position, Events* events) {
  Group& g = groups_[id];
  // The batches at this position whose original output is not in.
  std::vector<BatchKey> missing;
  int failed = 0;
  for (BatchKey k : g.batches) {
    const BatchState& b = batches_[k];
    if (position >= b.size || b.done) continue;
    missing.push_back(k);
    failed += b.failed;
  }
  const Parity parity = g.full ? g.parity[position] : Parity::kNone;
  if (parity == Parity::kIn && missing.size() == 1) {
    BatchState& b = batches_[missing[0]];
    if (Unanswered(b.slots[position]) && !b.offered[position]) {
      b.offered[position] = true;
      std::vector<const float*> others;
      for (BatchKey k : g.batches) {
        const BatchState& o = batches_[k];
        if (k != missing[0] && position < o.size) others.push_back(o.outputs.data() + position * output_elements_);
      }
      Reconstruction r{missing[0], position, std::vector<float>(output_elements_)};
      ParityCodec::Decode(g.parity_out[position], others, r.output.data());
      events->reconstructions.push_back(std::move(r));
      return;
    }
  }
  // Failed positions that no reconstruction can rescue any more.
  const bool hopeless = parity == Parity::kNone || parity == Parity::kLost || failed >= 2 ||
                        (parity == Parity::kIn && missing.size() != 1);
  if (!hopeless) return;
  for (BatchKey k : missing) {
    BatchState& b = batches_[k];
    if (b.failed && b.slots[position] == Slot::kFailedWaiting) {
      b.slots[position] = Slot::kFailed;
      events->failures.push_back({k, position});
    }
  }
}

void ParityGroups::MaybeForget(GroupId id) {
  auto it = groups_.find(id);
  if (it == groups_.end() || !it->second.full) return;
  for (BatchKey k : it->second.batches) {
    const BatchState& b = batches_[k];
    if (!b.done && !b.failed) return;
    for (int p = 0; p < b.size; ++p) {
      if (Unanswered(b.slots[p])) return;
    }
  }
  for (BatchKey k : it->second.batches) batches_.erase(k);
  groups_.erase(it);
}

}  // namespace tutti
