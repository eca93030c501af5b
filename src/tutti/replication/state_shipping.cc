#include <utility>

#include "tutti/replication/replicated_executor_impl.h"

namespace tutti {

using replication::kCheckpoint;
using replication::ProxyClock;
using replication::PutState;
using replication::StateBytes;

void ReplicatedExecutor::Impl::DetachLocked() {
  if (channel_ == nullptr || !options_.distributed) return;
  channel_.reset();
  watermark_ = last_state_seq_ = 0;
  for (auto& [n, p] : pending_) p.log_seq = p.release_seq = 0;
  Advance();
}

void ReplicatedExecutor::Impl::StartChannel() {
  {
    std::lock_guard<std::mutex> b(backup_mu_);
    backup_ = std::make_unique<BackupState>();
  }
  watermark_ = last_state_seq_ = 0;
  channel_ = replication::MakeLocalChannel(clock_, options_.link_rtt, backup_.get(), &backup_mu_,
                                           &outside_time_);
}

uint64_t ReplicatedExecutor::Impl::Ship(bool state) {
  Outgoing& m = *next_;
  m.seq = ++channel_->numbered;
  ++stats_.messages;
  (state ? stats_.state_bytes : stats_.log_bytes) += static_cast<int64_t>(m.size);
  const uint64_t seq = m.seq;
  if (channel_->Post(next_)) outside_.flush = channel_;
  return seq;
}

uint64_t ReplicatedExecutor::Impl::Ship(std::string bytes, bool state) {
  next_->size = bytes.size();
  next_->bytes = std::move(bytes);
  return Ship(state);
}

void ReplicatedExecutor::Impl::ShipCheckpoint(uint64_t n) {
  last_state_seq_ = Ship(Checkpoint(n), true);
  for (auto& [k, s] : states_) s.shipped = last_state_seq_;
}

void ReplicatedExecutor::Impl::QueueStates(uint64_t n, const Pending& p) {
  const SlotModel& m = models_[p.served.model];
  Unshipped& u = unshipped_.emplace_back();
  u.n = n;
  u.first = unshipped_keys_.size();
  for (const Row& row : p.rows) {
    unshipped_keys_.emplace_back(row.key, !m.model_state && (row.lost || row.end));
    if (m.model_state) break;  // one state
  }
  u.last = unshipped_keys_.size();
  Writer answers;
  PutAnswers(answers, n, p,
             m.model_state ? m.output_elements : m.output_elements + m.state_elements);
  u.answers = answers.Take();
  if (!policy_.ships_after_answers) ShipStatesLocked();
}

void ReplicatedExecutor::Impl::ShipStatesLocked() {
  for (Unshipped& u : unshipped_) {
    if (!replicating()) break;  // the backup went since QueueStates: nothing to ship to
    const Duration began = ProxyClock();
    Outgoing& out = *next_;
    out.states_of = u.n;
    size_t bytes = 1 + 2 * sizeof(uint64_t);
    const uint64_t seq = channel_->numbered + 1;  // the number Ship gives it
    for (size_t i = u.first; i < u.last; ++i) {
      const auto& [key, erased] = unshipped_keys_[i];
      auto it = erased ? states_.end() : states_.find(key);
      State* st = it == states_.end() ? nullptr : &it->second;
      if (st == nullptr) {
        out.states.emplace_back(key, std::nullopt);
        out.counts.push_back(0);
      } else {
        State& copy = out.states.emplace_back(key, State{}).second.value();
        copy.version = st->version;
        copy.digest = st->digest;
        copy.parent = st->parent;
        copy.touched = st->touched;
        const int64_t n = st->value ? static_cast<int64_t>(st->value->size()) : 0;
        if (n > Outgoing::kCopied) {
          copy.value = st->value;
          out.counts.push_back(0);
        } else {
          if (n > 0) out.values.insert(out.values.end(), st->value->begin(), st->value->end());
          out.counts.push_back(n);
        }
        st->shipped = seq;
      }
      bytes += StateBytes(st);
    }
    out.bytes.assign(u.answers);
    out.size = bytes + out.bytes.size();
    last_state_seq_ = Ship(true);
    stats_.proxy_time += ProxyClock() - began;
  }
  unshipped_.clear();
  unshipped_keys_.clear();
}

uint64_t ReplicatedExecutor::Impl::ShipLog(uint64_t n, const Pending& p) {
  Outgoing& m = *next_;
  m.log_of = n;
  Logged& l = m.log;
  l.model = p.served.model;
  l.size = p.served.size;
  for (int i = 0; i < l.size; ++i) {
    const Row& row = p.rows[i];
    l.sequences.push_back({row.key.second, row.start, row.end});
    l.tags.push_back(i < static_cast<int>(p.served.tags.size()) ? p.served.tags[i] : 0);
    l.reads.push_back(row.read_digest);
  }
  l.input.assign(p.served.input.begin(), p.served.input.end());
  m.size = 1 + sizeof(uint64_t) + 2 * sizeof(int) + l.size * (3 * sizeof(uint64_t) + 2) +
           sizeof(int64_t) + l.input.size() * sizeof(float);
  return Ship(false);
}

void ReplicatedExecutor::Impl::PutAnswers(Writer& w, uint64_t n, const Pending& p, int64_t stride) {
  const SlotModel& m = models_[p.served.model];
  const bool every = !options_.distributed && policy_.holds_answers;
  auto tag = [&](int i) -> uint64_t {
    if (p.rows[i].lost) return 0;
    if (every) return ItemTag(n, i);
    return i < static_cast<int>(p.served.tags.size()) ? p.served.tags[i] : 0;
  };
  int64_t kept = 0;
  for (int i = 0; i < p.served.size; ++i) kept += tag(i) != 0;
  w.Put(kept);
  for (int i = 0; i < p.served.size; ++i) {
    if (tag(i) == 0) continue;
    w.Put(tag(i));
    w.PutFloats(p.result.output.data() + i * stride, m.output_elements);
  }
}

std::string ReplicatedExecutor::Impl::Checkpoint(uint64_t n) {
  Writer w;
  w.Put<uint8_t>(kCheckpoint);
  w.Put(n);
  w.Put<int64_t>(static_cast<int64_t>(states_.size()));
  for (const auto& [k, s] : states_) PutState(w, k, &s);
  return w.Take();
}

}  // namespace tutti
