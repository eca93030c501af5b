#include <utility>

#include "tutti/core/clock.h"
#include "tutti/replication/replicated_executor_impl.h"

namespace tutti {

using replication::ProxyClock;

ReplicatedExecutor::Impl::Impl(Clock* clock, std::unique_ptr<Executor> primary,
                               std::unique_ptr<Executor> backup, std::vector<SlotModel> models,
                               ReplicationOptions options, ExecutorFactory spare)
    : clock_(clock),
      models_(std::move(models)),
      options_(options),
      spare_(std::move(spare)),
      primary_(std::move(primary)),
      backup_exec_(std::move(backup)) {
  if (backup_exec_ != nullptr) StartChannel();
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.distributed) {
    standby_ = true;
    std::lock_guard<std::mutex> b(backup_mu_);
    backup_ = std::make_unique<BackupState>();
  } else if (options_.detect_after > 0) {
    ScheduleCheck();
  }
}

ReplicatedExecutor::Impl::~Impl() {
  {
    gate_->Close();  // a check under way ends first
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (check_ != kNoTimer) clock_->Cancel(check_);
    if (delivery_timer_ != kNoTimer) clock_->Cancel(delivery_timer_);
  }
  if (detector_.joinable()) detector_.join();
  if (spare_thread_.joinable()) spare_thread_.join();
  for (std::thread& t : promoters_) t.join();
  std::shared_ptr<Channel> channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = std::move(channel_);
  }
  if (channel) channel->Kill();  // joins its thread: no ack after this
  {
    std::lock_guard<std::mutex> in(incoming_mu_);
    incoming_.clear();
  }
  // Batches still queued finish first, calling back into this.
  dead_.clear();
  primary_.reset();
  backup_exec_.reset();
}

void ReplicatedExecutor::Impl::Run(ExecBatch batch, DoneFn done) {
  {
    std::lock_guard<std::mutex> in(incoming_mu_);
    incoming_.push_back({std::move(batch), std::move(done), clock_->Now()});
    incoming_any_.store(true);
  }
  if (!DrainIncoming(kRunSpins)) queued_batches_.fetch_add(1, std::memory_order_relaxed);
}

bool ReplicatedExecutor::Impl::DrainIncoming(int spins) {
  while (incoming_any_.load()) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    for (int i = 0; i < spins && !lock.owns_lock() && incoming_any_.load(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      lock.try_lock();
    }
    if (!lock.owns_lock()) return false;
    std::vector<Received> in;
    {
      std::lock_guard<std::mutex> q(incoming_mu_);
      in.swap(incoming_);
      incoming_any_.store(false);
    }
    for (Received& r : in) AcceptLocked(std::move(r));
    Outside o = TakeOutside();
    lock.unlock();
    Deliver(std::move(o));
  }
  return true;
}

void ReplicatedExecutor::Impl::AcceptLocked(Received r) {
  if (standby_ || promoting_) {  // only the slot's holder gets batches: take over first
    deferred_.push_back(std::move(r));
    StartPromotionLocked();
    return;
  }
  if (!kept_.empty() && clock_->Now() > kept_until_)
    kept_.clear();  // the requests that come again came
  if (!kept_.empty() && !r.batch.tags.empty()) {
    std::vector<std::optional<Kept>> kept = TakeKeptLocked(r.batch);
    if (!kept.empty()) {
      r.batch = SplitKept(std::move(r.batch), r.done, std::move(kept));
      if (r.batch.size == 0) {
        outside_.answers.emplace_back(std::move(r.done), ExecResult{});
        return;
      }
    }
  }
  const uint64_t n = ++next_batch_;
  Pending& p = pending_[n];
  p.stateful =
      models_.at(r.batch.model).state_elements > 0 || models_.at(r.batch.model).model_state;
  p.served = std::move(r.batch);
  p.done = std::move(r.done);
  p.received = r.received;
  if (recovering_) {
    held_.push_back(n);
    return;
  }
  Start(n);
}

std::string ReplicatedExecutor::Impl::kind() const {
  OtherLock lock(this);
  return primary_->kind();
}

void ReplicatedExecutor::Impl::AttachBackup(SendFn send) {
  Outside o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    DetachLocked();
    channel_ = replication::MakeRemoteChannel(std::move(send), &outside_time_);
    if (policy_.keeps_states) ShipCheckpoint(last_committed_);
    // The checkpoint holds committed states only: checkpoint-replay logs
    // the batches already under way after it, so that a takeover replays
    // them (NSPB and Remus ship their states when they commit).
    if (policy_.checkpoints) {
      for (auto& [n, p] : pending_) {
        if (p.stateful && p.dispatched && n > last_committed_) p.log_seq = ShipLog(n, p);
      }
    }
    o = TakeOutside();
  }
  Finish(std::move(o));
}

void ReplicatedExecutor::Impl::DetachBackup() {
  Outside o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    DetachLocked();
    o = TakeOutside();
  }
  Finish(std::move(o));
}

bool ReplicatedExecutor::Impl::BeginFromPrimary() {
  OtherLock lock(this);
  if (!standby_) return false;
  std::lock_guard<std::mutex> b(backup_mu_);
  backup_ = std::make_unique<BackupState>();
  return true;
}

bool ReplicatedExecutor::Impl::ApplyFromPrimary(const std::string& body) {
  OtherLock lock(this);
  if (!standby_) return false;  // promoted: never adopts a state of the old primary's again
  const Duration began = ProxyClock();
  {
    std::lock_guard<std::mutex> b(backup_mu_);
    backup_->Apply(body);
  }
  stats_.proxy_time += ProxyClock() - began;
  return true;
}

ReplicationStats ReplicatedExecutor::Impl::stats() const {
  OtherLock lock(this);
  ReplicationStats s = stats_;
  s.proxy_time += outside_time_.load(std::memory_order_relaxed);
  s.queued_batches = queued_batches_.load(std::memory_order_relaxed);
  s.live_states = static_cast<int64_t>(states_.size());
  s.backup = backup_exec_ != nullptr || (options_.distributed && channel_ != nullptr);
  std::lock_guard<std::mutex> b(backup_mu_);
  s.backup_states = backup_ ? static_cast<int64_t>(backup_->states.size()) : 0;
  s.link_peak_bytes = channel_ != nullptr ? channel_->peak_bytes() : 0;
  return s;
}

std::vector<std::optional<replication::Kept>> ReplicatedExecutor::Impl::TakeKeptLocked(const ExecBatch& batch) {
  std::vector<std::optional<Kept>> kept(batch.size);
  bool any = false;
  for (int i = 0; i < batch.size && i < static_cast<int>(batch.tags.size()); ++i) {
    auto it = kept_.find(batch.tags[i]);
    if (it == kept_.end()) continue;
    kept[i] = std::move(it->second);
    kept_.erase(it);
    any = true;
  }
  if (!any) kept.clear();
  return kept;
}

ExecBatch ReplicatedExecutor::Impl::SplitKept(ExecBatch batch, DoneFn& done,
                                              std::vector<std::optional<Kept>> kept) const {
  const SlotModel& m = models_[batch.model];
  ExecBatch rest;
  rest.model = batch.model;
  rest.start_at = batch.start_at;
  rest.state = batch.state;
  for (int i = 0; i < batch.size; ++i) {
    if (kept[i]) continue;
    ++rest.size;
    rest.input.insert(rest.input.end(), batch.input.begin() + i * m.input_elements,
                      batch.input.begin() + (i + 1) * m.input_elements);
    if (i < static_cast<int>(batch.sequences.size())) rest.sequences.push_back(batch.sequences[i]);
    if (i < static_cast<int>(batch.tags.size())) rest.tags.push_back(batch.tags[i]);
  }
  const int64_t width = m.output_elements;
  auto merge = [kept = std::move(kept), width, done = std::move(done)](ExecResult r) mutable {
    ExecResult out;
    out.received = r.received;
    out.ready = r.ready;
    out.started = r.started;
    out.finished = r.finished;
    bool any_error = false;
    int j = 0;  // among the items run
    for (std::optional<Kept>& k : kept) {
      absl::Status status = k ? k->status
                              : (!r.status.ok()                               ? r.status
                                 : j < static_cast<int>(r.item_status.size()) ? r.item_status[j]
                                                                              : absl::OkStatus());
      if (k && status.ok()) {
        out.output.insert(out.output.end(), k->output.begin(), k->output.end());
      } else if (!k && r.status.ok()) {
        out.output.insert(out.output.end(), r.output.begin() + j * width,
                          r.output.begin() + (j + 1) * width);
      } else {
        out.output.insert(out.output.end(), width, 0.0f);
      }
      if (!k) ++j;
      any_error |= !status.ok();
      out.item_status.push_back(std::move(status));
    }
    if (!any_error) out.item_status.clear();
    done(std::move(out));
  };
  done = std::move(merge);
  return rest;
}

ReplicatedExecutor::Impl::Outside ReplicatedExecutor::Impl::TakeOutside() {
  Outside o;
  std::swap(o, outside_);
  o.states = !unshipped_.empty();
  return o;
}

void ReplicatedExecutor::Impl::Finish(Outside o) {
  Deliver(std::move(o));
  DrainIncoming();
}

void ReplicatedExecutor::Impl::Deliver(Outside o) {
  for (Dispatch& d : o.dispatch) {
    d.exec->Run(std::move(d.batch), [this, gen = d.generation, n = d.n](ExecResult r) {
      OnPrimaryDone(gen, n, std::move(r));
    });
  }
  for (auto& [done, result] : o.answers) done(std::move(result));
  if (o.states) {
    std::lock_guard<std::mutex> lock(mu_);
    ShipStatesLocked();
    if (outside_.flush) o.flush = std::move(outside_.flush);
  }
  if (o.flush) o.flush->Flush();
}

ReplicatedExecutor::ReplicatedExecutor(Clock* clock, std::unique_ptr<Executor> primary,
                                       std::unique_ptr<Executor> backup,
                                       std::vector<SlotModel> models, ReplicationOptions options,
                                       ExecutorFactory spare)
    : impl_(std::make_unique<Impl>(clock, std::move(primary), std::move(backup), std::move(models),
                                   options, std::move(spare))) {}
ReplicatedExecutor::~ReplicatedExecutor() = default;
void ReplicatedExecutor::Run(ExecBatch batch, DoneFn done) {
  impl_->Run(std::move(batch), std::move(done));
}
std::string ReplicatedExecutor::kind() const { return impl_->kind(); }
absl::Status ReplicatedExecutor::KillPrimary() { return impl_->KillPrimary(); }
ReplicationStats ReplicatedExecutor::stats() const { return impl_->stats(); }
ReplicationMode ReplicatedExecutor::mode() const { return impl_->mode(); }
void ReplicatedExecutor::HangPrimary() { impl_->HangPrimary(); }
void ReplicatedExecutor::AttachBackup(SendFn send) { impl_->AttachBackup(std::move(send)); }
void ReplicatedExecutor::OnBackupApplied(uint64_t seq) { impl_->OnBackupApplied(seq); }
void ReplicatedExecutor::DetachBackup() { impl_->DetachBackup(); }
bool ReplicatedExecutor::BeginFromPrimary() { return impl_->BeginFromPrimary(); }
bool ReplicatedExecutor::ApplyFromPrimary(const std::string& body) {
  return impl_->ApplyFromPrimary(body);
}
void ReplicatedExecutor::Promote() { impl_->Promote(); }
void ReplicatedExecutor::Demote() { impl_->Demote(); }
bool ReplicatedExecutor::serving() const { return impl_->serving(); }

}  // namespace tutti
