#include <algorithm>

#include "tutti/replication/replicated_executor_impl.h"

namespace tutti {

using replication::Digest;
using replication::ProxyClock;

ExecBatch ReplicatedExecutor::Impl::Prepare(uint64_t n) {
  Pending& p = pending_.at(n);
  ExecBatch full;
  full.model = p.served.model;
  full.size = p.served.size;
  full.start_at = p.served.start_at;
  if (!p.stateful) {
    full.input = p.served.input;
    return full;
  }
  const Duration began = ProxyClock();
  const SlotModel& m = models_[p.served.model];
  const Time now = clock_->Now();
  SweepIdle(now);
  if (m.model_state) {  // every item reads the model's one state
    full.input = p.served.input;
    Row row;
    row.key = {p.served.model, 0};
    if (auto it = states_.find(row.key); it != states_.end()) {
      full.state = *it->second.value;
      row.read_version = it->second.version;
      row.read_digest = it->second.digest;
      row.read_parent = it->second.parent;
      row.read_shipped = it->second.shipped;
    }
    p.rows.assign(p.served.size, row);
    stats_.proxy_time += ProxyClock() - began;
    return full;
  }
  full.input.reserve(p.served.size * (m.input_elements + m.state_elements));
  p.rows.assign(p.served.size, Row{});
  std::vector<float>& zeros = zeros_[p.served.model];
  if (zeros.empty()) {
    zeros.assign(m.state_elements, 0.0f);
    zero_digest_[p.served.model] = Digest(zeros.data(), m.state_elements);
  }
  for (int i = 0; i < p.served.size; ++i) {
    const SequenceRef ref =
        i < static_cast<int>(p.served.sequences.size()) ? p.served.sequences[i] : SequenceRef{};
    Row& row = p.rows[i];
    row.key = {p.served.model, ref.id};
    row.start = ref.start;
    row.end = ref.end;
    const float* x = p.served.input.data() + i * m.input_elements;
    full.input.insert(full.input.end(), x, x + m.input_elements);
    const State* s = nullptr;
    if (!ref.start) {
      auto it = states_.find(row.key);
      if (it != states_.end()) {
        it->second.touched = now;
        s = &it->second;
      }
    }
    if (s != nullptr) {
      row.read_version = s->version;
      row.read_digest = s->digest;
      row.read_parent = s->parent;
      row.read_shipped = s->shipped;
      full.input.insert(full.input.end(), s->value->begin(), s->value->end());
    } else {
      row.lost = !ref.start;
      row.read_digest = zero_digest_[p.served.model];
      full.input.insert(full.input.end(), zeros.begin(), zeros.end());
    }
  }
  stats_.proxy_time += ProxyClock() - began;
  return full;
}

void ReplicatedExecutor::Impl::SweepIdle(Time now) {
  if (now < next_sweep_) return;
  Duration shortest = kInfiniteFuture;
  for (auto it = states_.begin(); it != states_.end();) {
    const Duration limit = models_[it->first.first].max_idle;
    shortest = std::min(shortest, limit);
    if (limit > 0 && now - it->second.touched > limit) {
      audit_.erase(it->first);
      states_.erase(it++);
    } else {
      ++it;
    }
  }
  next_sweep_ =
      now +
      (shortest == kInfiniteFuture ? kSecond : std::max<Duration>(shortest / 2, kMillisecond));
}

void ReplicatedExecutor::Impl::Commit(uint64_t n, Pending& p) {
  last_committed_ = std::max(last_committed_, n);
  const SlotModel& m = models_[p.served.model];
  if (m.model_state) {
    const Row& row = p.rows.at(0);
    State& s = states_[row.key];
    s.digest = Digest(p.result.state.data(), static_cast<int64_t>(p.result.state.size()));
    s.value = std::make_shared<const std::vector<float>>(std::move(p.result.state));
    s.version = row.read_version + 1;
    s.parent = row.read_digest;
    s.touched = clock_->Now();
    return;
  }
  const int64_t width = m.output_elements + m.state_elements;
  const Time now = clock_->Now();
  for (int i = 0; i < p.served.size; ++i) {
    const Row& row = p.rows[i];
    if (row.lost || row.end) {
      if (row.end) states_.erase(row.key);
      continue;
    }
    const float* h = p.result.output.data() + i * width + m.output_elements;
    State& s = states_[row.key];
    s.value = std::make_shared<const std::vector<float>>(h, h + m.state_elements);
    s.version = row.read_version + 1;
    s.parent = row.read_digest;
    s.digest = Digest(h, m.state_elements);
    s.touched = now;
  }
}

ReplicatedExecutor::Impl::Delivery ReplicatedExecutor::Impl::Answer(uint64_t n, bool delivered) {
  Pending p = std::move(pending_.at(n));
  pending_.erase(n);
  ExecResult r = std::move(p.result);
  if (p.stateful && r.status.ok() && models_[p.served.model].model_state) {
    r.state.clear();
    if (!p.rows.empty() && delivered) Audit(p.rows[0]);  // the batch read one state
  } else if (p.stateful && r.status.ok()) {
    const SlotModel& m = models_[p.served.model];
    const int64_t width = m.output_elements + m.state_elements;
    std::vector<float> out;
    out.reserve(p.served.size * m.output_elements);
    bool any_lost = false;
    for (int i = 0; i < p.served.size; ++i) {
      const float* y = r.output.data() + i * width;
      out.insert(out.end(), y, y + m.output_elements);
      any_lost |= p.rows[i].lost;
    }
    r.output = std::move(out);
    if (any_lost) {
      for (const Row& row : p.rows) {
        r.item_status.push_back(row.lost ? LostError(row.key) : absl::OkStatus());
        stats_.lost_states += row.lost;
      }
    }
    if (delivered) {
      for (const Row& row : p.rows) Audit(row);
    }
  }
  if (delivered) NoteAnswerAfterFailover();
  return {std::move(p.done), std::move(r)};
}

void ReplicatedExecutor::Impl::Audit(const Row& row) {
  if (row.lost) {
    audit_.erase(row.key);
    return;
  }
  if (!row.start) {
    auto it = audit_.find(row.key);
    if (it != audit_.end()) {
      ++stats_.audited;
      stats_.inconsistent += row.read_parent != it->second;
    }
  }
  if (row.end) {
    audit_.erase(row.key);
  } else {
    audit_[row.key] = row.read_digest;
  }
}

void ReplicatedExecutor::Impl::Advance() {
  // A failover is under way: every batch not yet released runs again on
  // the new primary (Recover) — none leaves from the dead one, whose
  // states may have died on the link.
  if (recovering_) return;
  Refresh();
  for (;;) {
    if (MoveOn() == 0) return;
    const uint64_t before = watermark_;
    Refresh();
    if (watermark_ == before) break;
  }
  AwaitDelivery();
}

uint64_t ReplicatedExecutor::Impl::MoveOn() {
  const bool rep = replicating();
  while (!computed_.empty()) {
    const uint64_t n = computed_.front();
    Pending& p = pending_.at(n);
    // Batch n's update stage waits for its inputs' log (modes that log)
    // and, under NSPB, for the states it read (HAMS waits for batch n-1's, all of the model's
    // state; a sequence's state is its own, so a batch of other
    // sequences need not wait — a takeover replays it from the same
    // parents). Clamped to the last states shipped: messages numbered
    // on an earlier link.
    uint64_t need = 0;
    if (rep && policy_.logs_inputs) need = p.log_seq;
    if (rep && policy_.update_waits_for_reads) {
      uint64_t read = 0;
      for (const Row& row : p.rows) read = std::max(read, row.read_shipped);
      need = std::max(need, std::min(read, last_state_seq_));
    }
    if (watermark_ < need) {
      p.waited = true;
      return need;
    }
    computed_.pop_front();
    const int p_model = p.served.model;
    if (!unshipped_.empty()) ShipStatesLocked();  // before its states change
    const Duration began = ProxyClock();
    Commit(n, p);
    ++stats_.stateful_batches;
    const bool ships = rep && policy_.ships_states;
    if (ships) {
      QueueStates(n, p);
    } else if (rep && policy_.checkpoints && ++since_checkpoint_ >= options_.checkpoint_every) {
      since_checkpoint_ = 0;
      ShipCheckpoint(n);
    }
    stats_.proxy_time += ProxyClock() - began;
    if (rep && policy_.holds_answers) {
      p.release_seq = last_state_seq_;  // its answers wait for this message
      p.waited = p.release_seq > watermark_;
      held_release_.push_back(n);
    } else {
      Release(n);
    }
    if (models_[p_model].model_state) Unblock(p_model);
  }
  while (!held_release_.empty()) {
    const uint64_t awaited = pending_.at(held_release_.front()).release_seq;
    if (rep && awaited > watermark_) return awaited;
    Release(held_release_.front());
    held_release_.pop_front();
  }
  return 0;
}

void ReplicatedExecutor::Impl::Refresh() {
  if (channel_ != nullptr)
    watermark_ = std::max(watermark_, channel_->Delivered(clock_->Now(), &next_delivery_));
}

void ReplicatedExecutor::Impl::AwaitDelivery() {
  if (next_delivery_ == kInfiniteFuture || delivery_timer_ != kNoTimer) return;
  delivery_timer_ = clock_->ScheduleAt(
      next_delivery_, [gate = gate_] { gate->Run([](Impl& impl) { impl.OnAcked(0); }); });
}

void ReplicatedExecutor::Impl::Release(uint64_t n) {
  Pending& p = pending_.at(n);
  p.result.released = clock_->Now();
  stats_.release_time += clock_->Now() - p.computed;
  if (p.waited) {
    ++stats_.held_batches;
    stats_.held_time += clock_->Now() - p.computed;
  }
  outside_.answers.push_back(Answer(n));
}

void ReplicatedExecutor::Impl::OnPrimaryDone(int gen, uint64_t n, ExecResult r) {
  Outside o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gen != generation_ || hung_) return;  // from a primary that died: its batches run again
    Pending& p = pending_.at(n);
    p.result = std::move(r);
    p.computed = clock_->Now();
    p.answered = true;
    StampReceipt(p);
    if (!p.stateful || !p.result.status.ok()) {
      const int model = p.served.model;
      outside_.answers.push_back(Answer(n));
      if (models_[model].model_state) Unblock(model);
    } else {
      computed_.push_back(n);
      Advance();
    }
    o = TakeOutside();
  }
  Finish(std::move(o));
}

void ReplicatedExecutor::Impl::StampReceipt(Pending& p) {
  ExecResult& r = p.result;
  const Time previous = last_finished_;
  last_finished_ = std::max(last_finished_, r.finished);
  if (p.received > r.received) return;  // an executor that does not time its batches
  const Time waited_for = r.ready > r.received ? r.ready : 0;
  r.received = p.received;
  r.ready = std::min(r.started, std::max({p.received, waited_for, std::min(previous, r.started)}));
}

void ReplicatedExecutor::Impl::OnAcked(uint64_t seq) {
  Outside o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (seq == 0) delivery_timer_ = kNoTimer;
    watermark_ = std::max(watermark_, seq);
    Advance();
    o = TakeOutside();
  }
  Finish(std::move(o));
}

void ReplicatedExecutor::Impl::Start(uint64_t n) {
  Pending& p = pending_.at(n);
  const int model = p.served.model;
  if (models_[model].model_state) {
    if (model_busy_[model]) {
      model_waiting_[model].push_back(n);
      return;
    }
    model_busy_[model] = true;
  }
  if (!unshipped_.empty())
    ShipStatesLocked();  // the states it reads, and which message carries them
  ExecBatch full = Prepare(n);
  if (logs() && replicating() &&
      p.stateful) {  // the request manager: delivered while the batch computes
    const Duration began = ProxyClock();
    p.log_seq = ShipLog(n, p);
    stats_.proxy_time += ProxyClock() - began;
  }
  p.dispatched = true;
  p.dispatched_at = clock_->Now();
  if (hung_) return;  // the injected hang: the primary never hears of it
  outside_.dispatch.push_back({primary_.get(), generation_, n, std::move(full)});
}

void ReplicatedExecutor::Impl::Unblock(int model) {
  model_busy_[model] = false;
  std::deque<uint64_t>& waiting = model_waiting_[model];
  if (waiting.empty()) return;
  const uint64_t n = waiting.front();
  waiting.pop_front();
  Start(n);
}

}  // namespace tutti
