#include "tutti/distributed/scheduler_node.h"

#include <algorithm>
#include <iostream>
#include <random>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/status_macros.h"
#include "tutti/distributed/slot_assignment.h"

namespace tutti {

namespace pb = ::tutti::internal;

SchedulerNode::SchedulerNode(ClusterSpec spec, Options options, Clock* clock)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      clock_(clock),
      locked_clock_(
          clock, {},
          [this](Time due) {
            if (delays_) delays_->Record(Delay::kTimer, clock_->Now(), clock_->Now() - due);
          }),
      mu_(locked_clock_.mu()),
      listener_([this](Batch b) { OnDispatch(std::move(b)); }, [this](const Request& r, DropReason why) { OnDrop(r, why); }) {
  // Batch ids: a random high half per node, so that a new leader's never
  // collide with a previous leader's still held by backends.
  next_batch_ = static_cast<uint64_t>(std::random_device{}()) << 32;
  local_index_ = spec_.LocalIndex();
  const std::vector<SubCluster> subs = spec_.EffectiveSubClusters();
  for (int g = 0; g < static_cast<int>(subs.size()); ++g) {
    for (int i = 0; i < subs[g].num_gpus; ++i) slots_.push_back(Slot{g, ""});
  }
}

SchedulerNode::~SchedulerNode() {
  streams_.CloseAll();
  streams_.WaitAll();
  std::unique_lock<std::mutex> lock(mu_);
  locked_clock_.Close(lock);
  if (delays_) delays_->Stop();
  clock_->Cancel(report_timer_);
  clock_->Cancel(detect_timer_);
  autoscaler_.reset();  // cancels its timers
  task_scaler_.reset();
  scheduler_.reset();
}

absl::Status SchedulerNode::Lead() {
  std::lock_guard<std::mutex> lock(mu_);
  TUTTI_ASSIGN_OR_RETURN(scheduler_,
                         CreateScheduler(options_.policy, spec_, options_.scheduler, &locked_clock_, &listener_));
  for (GpuId g = 0; g < static_cast<GpuId>(slots_.size()); ++g) {
    TUTTI_RETURN_IF_ERROR(scheduler_->SetGpuUp(g, false, 0));
  }
  delays_ = std::make_unique<DelayModel>(spec_, options_.delays,
                                         DelayPlan{spec_.delays, options_.scheduler.frontrun_slack, {}});
  delays_->Start(&locked_clock_, [this](const DelayPlan& plan) { scheduler_->SetDelayPlan(plan); });
  report_timer_ = locked_clock_.ScheduleAfter(options_.report_every, [this] { ReportTick(); });
  if (options_.detect_after > 0 && absl::c_linear_search(options_.stateful_groups, true)) {
    detect_timer_ = locked_clock_.ScheduleAfter(options_.detect_after / 4, [this] { DetectTick(); });
  }
  if (options_.autoscale) {
    TUTTI_RETURN_IF_ERROR(Autoscaler::Validate(*options_.autoscale, static_cast<int>(slots_.size())));
    // Its ticks and arrivals run on locked_clock_, so under mu_ as these are.
    autoscaler_ = std::make_unique<Autoscaler>(
        *options_.autoscale, static_cast<int>(slots_.size()), &locked_clock_,
        [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return std::exchange(window_, {}); },
        [this](int gpu, bool up) ABSL_NO_THREAD_SAFETY_ANALYSIS { SetSlotWantedLocked(gpu, up); });
    autoscaler_->Start();
  }
  if (options_.model_less) {
    const Options::ModelLess& ml = *options_.model_less;
    const ModelLessTask& task = ml.task;
    TUTTI_RETURN_IF_ERROR(TaskAutoscaler::Validate(task.variants, task.requirements, task.options));
    variant_of_model_.assign(spec_.models.size(), -1);
    for (size_t j = 0; j < ml.models.size(); ++j) variant_of_model_[ml.models[j]] = static_cast<int>(j);
    // As the autoscaler's: its ticks and arrivals run under mu_.
    TaskAutoscaleOptions options = task.options;
    options.await_up = true;  // an instance serves once a backend holds its slot (AssignSlotsLocked)
    // The frontends hear of every change at once, not only with the next
    // report: a router must not send queries to an instance released.
    task_scaler_ = std::make_unique<TaskAutoscaler>(
        task.variants, task.requirements, options, &locked_clock_,
        [this](int gpu, bool up) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          SetSlotWantedLocked(gpu, up);
          SendTaskStateLocked();
        });
    task_scaler_->Start();
  }
  return absl::OkStatus();
}

bool SchedulerNode::leading() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_ != nullptr;
}

// ---- frontends ------------------------------------------------------------------

std::optional<FrontendPeerHandlers> SchedulerNode::AcceptFrontend(std::shared_ptr<FrontendPeer> link) {
  if (!leading()) return std::nullopt;
  // The frontend's index is known from its first message, its name.
  auto index = std::make_shared<int>(-1);
  return streams_.Track<pb::FrontendUp, pb::FrontendDown>(
      {[this, index, link](pb::FrontendUp& up) { OnFrontendMessage(index.get(), link, up); },
       [this, index, link] {
         if (*index >= 0) OnFrontendGone(*index, link);
       },
       [this](pb::FrontendDown* down) {
         if (down->has_pong()) down->mutable_pong()->set_sent(clock_->Now());
       }},
      link);
}

void SchedulerNode::OnFrontendMessage(int* index, const std::shared_ptr<FrontendPeer>& link, pb::FrontendUp& up) {
  const Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (scheduler_ == nullptr) return;
  if (*index < 0) {
    if (up.name().empty()) return;  // it has not said who it is
    auto [it, added] = frontend_index_.emplace(up.name(), static_cast<int>(frontends_.size()));
    if (added) frontends_.push_back({up.name(), nullptr});
    FrontendState& f = frontends_[it->second];
    if (up.incarnation() == f.incarnation && up.stream() < f.stream) return;  // an older stream, come late
    *index = it->second;
    f.link = link;
    f.incarnation = up.incarnation();
    f.stream = up.stream();
    SendReportLocked();
  }
  const int frontend = *index;
  if (up.has_ping()) {
    Send<pb::FrontendDown>(link, [sent = up.ping().sent(), now](pb::FrontendDown* d) {
      d->mutable_pong()->set_ping_sent(sent);
      d->mutable_pong()->set_received(now);
    });
  }
  for (const pb::ResponseSample& s : up.responses()) delays_->Record(Delay::kResponse, s.at(), s.delay());
  if (task_scaler_) {
    for (int j : up.load()) {
      if (j >= 0 && j < static_cast<int>(options_.model_less->task.variants.size())) task_scaler_->Load(j);
    }
  }
  std::vector<uint64_t> refused;
  for (const pb::RequestMeta& m : up.submit()) {
    if (m.model() < 0 || m.model() >= static_cast<int>(spec_.models.size())) {
      refused.push_back(m.id());
      continue;
    }
    const Request r{next_request_++, m.model(), now, m.deadline(), std::clamp(m.level(), 0, kDelayedLevel - 1),
                    m.delay_at() > 0 ? m.delay_at() : kInfiniteFuture};
    if (task_scaler_ && variant_of_model_[r.model] >= 0) task_scaler_->Count(variant_of_model_[r.model]);
    Origin& origin = origins_[r.id] = Origin{frontend, m.id(), r.model};
    if (!m.traceparent().empty() && options_.tracer != nullptr) {
      origin.trace = ParseTraceparent(m.traceparent()).value_or(TraceContext{});
    }
    if (delays_) delays_->RecordArrival(r.model, now);
    scheduler_->Submit(r);
  }
  if (!refused.empty()) {
    Send<pb::FrontendDown>(link, [&refused](pb::FrontendDown* d) {
      for (uint64_t id : refused) d->add_lost(id);
    });
  }
  if (up.withdrawn_size() > 0) WithdrawLocked(frontend, {up.withdrawn().data(), static_cast<size_t>(up.withdrawn_size())});
}

void SchedulerNode::WithdrawLocked(int frontend, absl::Span<const uint64_t> ids) {
  // Rare next to submits: one pass over the requests held, rather than an
  // index kept for every request.
  const absl::flat_hash_set<uint64_t> wanted(ids.begin(), ids.end());
  std::vector<std::pair<RequestId, ModelId>> found;
  for (const auto& [rid, o] : origins_) {
    if (o.frontend == frontend && wanted.contains(o.id)) found.emplace_back(rid, o.model);
  }
  for (const auto& [rid, model] : found) scheduler_->Withdraw(rid, model);
}

void SchedulerNode::OnFrontendGone(int frontend, const std::shared_ptr<FrontendPeer>& link) {
  std::lock_guard<std::mutex> lock(mu_);
  // Its queued requests still get batched; their plan parts go nowhere.
  if (frontends_[frontend].link == link) frontends_[frontend].link = nullptr;
}

void SchedulerNode::OnDrop(const Request& r, DropReason reason) {
  auto it = origins_.find(r.id);
  if (reason == DropReason::kWithdrawn) {  // its frontend has answered it
    if (it == origins_.end()) return;
    RecordSchedule(it->second, r, nullptr, "withdrawn: its client no longer waits");
    origins_.erase(it);
    return;
  }
  ++window_.outcomes.dropped;
  if (it == origins_.end()) return;
  const Origin o = it->second;
  origins_.erase(it);
  RecordSchedule(o, r, nullptr, "dropped: its latency objective cannot be met");
  Send<pb::FrontendDown>(frontends_[o.frontend].link, [id = o.id](pb::FrontendDown* d) { d->add_dropped(id); });
}

void SchedulerNode::RecordSchedule(const Origin& origin, const Request& r, const Batch* batch,
                                   const std::string& error) {
  if (options_.tracer == nullptr || !origin.trace.recording()) return;
  Span span{Tracer::Child(origin.trace), "schedule", Span::Kind::kInternal, r.arrival, clock_->Now()};
  span.attributes.push_back({"tutti.model", spec_.models[r.model].name});
  if (batch != nullptr) {
    span.attributes.push_back({"tutti.planned_start_us", static_cast<int64_t>(ToMicros(batch->exec_at - r.arrival))});
    span.attributes.push_back({"tutti.batch_size", static_cast<int64_t>(batch->requests.size())});
    span.attributes.push_back({"tutti.gpu", int64_t{batch->gpu}});
  }
  span.error = error;
  options_.tracer->Record(std::move(span));
}

void SchedulerNode::OnDispatch(Batch batch) {
  if (options_.holds_lease) options_.holds_lease();
  const uint64_t batch_id = next_batch_++;
  const Member& member = members_.at(slots_[batch.gpu].backend);
  // One part per frontend holding some of its requests (and still there).
  absl::flat_hash_map<int, std::vector<uint64_t>> parts;
  for (const Request& r : batch.requests) {
    const Origin& o = origins_.at(r.id);
    if (frontends_[o.frontend].link) parts[o.frontend].push_back(o.id);
  }
  const Time now = clock_->Now();
  Time deadline = kInfiniteFuture;
  for (const Request& r : batch.requests) {
    deadline = std::min(deadline, r.deadline);
    RecordSchedule(origins_.at(r.id), r, &batch, "");
  }
  in_flight_[batch_id] = InFlight{batch.gpu, now, batch.exec_at + batch.latency, std::move(batch.requests)};
  if (parts.empty()) {  // nobody to answer: nothing runs (done from a timer: not inside the scheduler's call)
    locked_clock_.ScheduleAt(now, [this, batch_id] {
      pb::Done d;
      d.set_batch(batch_id);
      DoneLocked(d);
    });
    return;
  }
  for (auto& [frontend, ids] : parts) {
    Send<pb::FrontendDown>(frontends_[frontend].link, [&](pb::FrontendDown* d) {
      pb::PlanPart* p = d->add_plans();
      p->set_batch(batch_id);
      p->set_backend(member.address);
      p->set_model(local_index_[batch.model]);
      p->set_exec_at(batch.exec_at);
      p->set_latency(batch.latency);
      p->set_parts(static_cast<int>(parts.size()));
      p->set_deadline(deadline);
      for (uint64_t id : ids) p->add_ids(id);
    });
  }
}

// ---- backends -------------------------------------------------------------------

std::optional<BackendPeerHandlers> SchedulerNode::AcceptBackend(std::shared_ptr<BackendPeer> link) {
  if (!leading()) return std::nullopt;
  auto id = std::make_shared<std::string>();
  return streams_.Track<pb::BackendUp, pb::BackendDown>(
      {[this, id, link](pb::BackendUp& up) { OnBackendMessage(link, id.get(), up); },
       [this, id, link] { OnBackendGone(link, *id); },
       [this](pb::BackendDown* down) {
         if (down->has_pong()) down->mutable_pong()->set_sent(clock_->Now());
       }},
      link);
}

void SchedulerNode::OnBackendMessage(const std::shared_ptr<BackendPeer>& link, std::string* id, pb::BackendUp& up) {
  const Time now = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (scheduler_ == nullptr) return;
    if (up.has_ping()) {
      Send<pb::BackendDown>(link, [sent = up.ping().sent(), now](pb::BackendDown* d) {
        d->mutable_pong()->set_ping_sent(sent);
        d->mutable_pong()->set_received(now);
      });
    }
    if (up.has_hello()) {
      const pb::Hello& h = up.hello();
      if (h.group() >= 0 && h.group() <= slots_.back().group) {  // slots are in group order
        RemoveLocked(h.id(), "reconnected");                    // a stream it had before is over
        *id = h.id();
        // A stateful group's primary (after a change of leader) goes first: it holds the states.
        members_[h.id()] =
            Member{h.id(), h.group(), h.address(), link, -1, h.primary() ? 0 : ++joins_, now + h.busy_for()};
        AssignSlotsLocked();
      }
    }
    for (const pb::Done& d : up.done()) DoneLocked(d);
  }
}

void SchedulerNode::OnBackendGone(const std::shared_ptr<BackendPeer>& link, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end() || it->second.link != link) return;  // replaced by a newer stream
  RemoveLocked(id, "left (its stream ended)");
}

void SchedulerNode::RemoveBackend(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  RemoveLocked(id, "left the cluster (its lease expired)");
}

void SchedulerNode::AssignSlotsLocked() {
  // Only wanted slots are handed out; a backend still draining a released
  // one is neither free nor a candidate.
  std::vector<GpuId> open;
  std::vector<int> groups;
  std::vector<std::string> holders;
  for (GpuId g = 0; g < static_cast<GpuId>(slots_.size()); ++g) {
    if (!slots_[g].wanted) continue;
    open.push_back(g);
    groups.push_back(slots_[g].group);
    holders.push_back(slots_[g].backend);
  }
  std::vector<SlotMember> snapshot;
  for (const auto& [id, m] : members_) {
    if (m.gpu < 0 || slots_[m.gpu].wanted) snapshot.push_back({id, m.group, m.joined});
  }
  const std::vector<std::string> next = AssignSlots(groups, holders, snapshot);
  const Time now = clock_->Now();
  for (size_t i = 0; i < open.size(); ++i) {
    const GpuId g = open[i];
    // Only free slots change hands: a holder leaves through RemoveLocked.
    if (next[i] == slots_[g].backend || next[i].empty()) continue;
    slots_[g].backend = next[i];
    slots_[g].taken_over = slots_[g].lost ? now : kInfiniteFuture;
    slots_[g].lost = false;
    Member& m = members_.at(next[i]);
    m.gpu = g;
    (void)scheduler_->SetGpuUp(g, true, std::max(now, m.free_at));
    if (task_scaler_ && task_scaler_->Up(g)) SendTaskStateLocked();
  }
  SendRolesLocked();
}

void SchedulerNode::SetSlotWantedLocked(GpuId gpu, bool wanted) {
  Slot& slot = slots_[gpu];
  if (slot.wanted == wanted) return;
  slot.wanted = wanted;
  if (!wanted) {
    if (!slot.backend.empty()) (void)scheduler_->SetGpuUp(gpu, false, 0);
    return ReleaseIfDrainedLocked(gpu);
  }
  if (!slot.backend.empty()) {  // wanted again before its holder was done draining
    (void)scheduler_->SetGpuUp(gpu, true, clock_->Now());
    return;
  }
  AssignSlotsLocked();
}

void SchedulerNode::ReleaseIfDrainedLocked(GpuId gpu) {
  Slot& slot = slots_[gpu];
  if (slot.wanted || slot.backend.empty()) return;
  for (const auto& [id, f] : in_flight_) {
    if (f.gpu == gpu) return;
  }
  std::cerr << absl::StrFormat("scheduler: autoscale: backend %s released GPU %d (now a spare)\n", slot.backend, gpu);
  members_.at(slot.backend).gpu = -1;
  slot.backend.clear();
  AssignSlotsLocked();  // a wanted slot may be waiting for a backend
}

void SchedulerNode::SendRolesLocked() {
  const int groups = slots_.empty() ? 0 : slots_.back().group + 1;
  std::vector<std::vector<Member*>> spares(groups);
  for (auto& [id, m] : members_) {
    if (m.gpu < 0 && Stateful(m.group)) spares[m.group].push_back(&m);
  }
  auto send = [](Member& m, bool holds, const std::string& backup) {
    const std::string role = absl::StrCat(holds, "|", backup);
    if (role == m.role) return;
    m.role = role;
    Send<pb::BackendDown>(m.link, [&](pb::BackendDown* d) {
      d->mutable_role()->set_holds_slot(holds);
      d->mutable_role()->set_backup(backup);
    });
  };
  std::vector<size_t> paired(groups, 0);
  for (auto& sp : spares) {
    std::sort(sp.begin(), sp.end(), [](const Member* a, const Member* b) { return a->joined < b->joined; });
  }
  for (const Slot& slot : slots_) {
    if (slot.backend.empty() || !Stateful(slot.group)) continue;
    std::vector<Member*>& sp = spares[slot.group];
    size_t& k = paired[slot.group];
    send(members_.at(slot.backend), true, k < sp.size() ? sp[k++]->address : "");
  }
  for (auto& sp : spares) {
    for (Member* m : sp) send(*m, false, "");
  }
}

void SchedulerNode::RemoveLocked(const std::string& id, const std::string& why) {
  auto it = members_.find(id);
  if (it == members_.end() || scheduler_ == nullptr) return;
  const GpuId gpu = it->second.gpu;
  members_.erase(it);
  if (gpu < 0) return SendRolesLocked();  // a backup may have left
  slots_[gpu].backend.clear();
  slots_[gpu].lost = true;
  (void)scheduler_->SetGpuUp(gpu, false, 0);
  // Its unfinished batches: schedule their requests again (dropped, and so
  // answered with an error, if their deadlines no longer allow).
  std::vector<Request> again;
  for (auto b = in_flight_.begin(); b != in_flight_.end();) {
    if (b->second.gpu != gpu) {
      ++b;
      continue;
    }
    again.insert(again.end(), b->second.requests.begin(), b->second.requests.end());
    in_flight_.erase(b++);
  }
  std::sort(again.begin(), again.end(), [](const Request& a, const Request& b) { return a.deadline < b.deadline; });
  for (const Request& r : again) scheduler_->Submit(r);
  std::cerr << absl::StrFormat("scheduler: backend %s (GPU %d) %s; %d requests of its unfinished batches "
                               "scheduled again\n",
                               id, gpu, why, again.size());
  AssignSlotsLocked();  // a spare of its group takes the slot
}

void SchedulerNode::DoneLocked(const pb::Done& done) {
  auto it = in_flight_.find(done.batch());
  if (it == in_flight_.end()) return;  // a previous leader's, or re-dispatched
  const InFlight& f = it->second;
  if (done.finished() > 0) {
    const ModelId model = f.requests.front().model;
    delays_->Record(Delay::kDispatch, done.finished(), done.ready() - f.decided);
    if (done.ok()) {
      delays_->RecordBatch(f.gpu, model, static_cast<int>(f.requests.size()), done.could_start(), done.started(),
                           done.finished());
    }
  }
  for (const Request& r : f.requests) {
    origins_.erase(r.id);
    if (!done.ok() || done.finished() <= 0) {
      ++window_.outcomes.error;
    } else {
      ++(done.finished() <= r.deadline ? window_.outcomes.good : window_.outcomes.late);
    }
  }
  if (done.finished() > 0 && done.started() > 0) window_.busy += done.finished() - done.started();
  const GpuId gpu = f.gpu;
  in_flight_.erase(it);
  scheduler_->OnBatchDone(gpu);
  if (!slots_[gpu].wanted) ReleaseIfDrainedLocked(gpu);
}

// ---- reports --------------------------------------------------------------------

int64_t SchedulerNode::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_ != nullptr ? scheduler_->queued() : 0;
}

DelayReport SchedulerNode::Delays() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (delays_ == nullptr) return {};
  return ReportLocked();
}

DelayReport SchedulerNode::ReportLocked() const {
  DelayReport report{delays_->options(), delays_->estimates(), delays_->plan(), delays_->histograms()};
  if (scheduler_ != nullptr) report.choices = scheduler_->Choices();
  return report;
}

void SchedulerNode::SendReportLocked() {
  if (delays_ == nullptr) return;
  auto report = std::make_shared<pb::DelayReport>();
  ToProto(ReportLocked(), report.get());
  const std::optional<pb::TaskState> task = TaskStateLocked();
  for (const FrontendState& f : frontends_) {
    Send<pb::FrontendDown>(f.link, [&](pb::FrontendDown* d) {
      *d->mutable_delays() = *report;
      if (task) *d->mutable_task() = *task;
    });
  }
}

std::optional<pb::TaskState> SchedulerNode::TaskStateLocked() {
  if (!task_scaler_) return std::nullopt;
  const TaskRoutingState state = task_scaler_->RoutingState();
  pb::TaskState task;
  task.mutable_up()->Add(state.up.begin(), state.up.end());
  task.mutable_paid()->Add(state.paid.begin(), state.paid.end());
  for (bool d : state.draining) task.add_draining(d);
  task.mutable_recent()->Add(state.recent.begin(), state.recent.end());
  task.set_cost(task_scaler_->Cost(0, clock_->Now()));
  return task;
}

void SchedulerNode::SendTaskStateLocked() {
  const std::optional<pb::TaskState> task = TaskStateLocked();
  if (!task) return;
  for (const FrontendState& f : frontends_) {
    Send<pb::FrontendDown>(f.link, [&](pb::FrontendDown* d) { *d->mutable_task() = *task; });
  }
}

void SchedulerNode::DetectTick() {
  const Time now = clock_->Now();
  std::vector<std::string> overdue;
  for (const auto& [id, f] : in_flight_) {
    const Slot& slot = slots_[f.gpu];
    if (Stateful(slot.group) && !slot.backend.empty() && now - f.due > options_.detect_after &&
        (slot.taken_over == kInfiniteFuture || now - slot.taken_over > 10 * options_.detect_after)) {
      overdue.push_back(slot.backend);
    }
  }
  for (const std::string& id : overdue) {
    auto it = members_.find(id);
    if (it == members_.end()) continue;  // (two overdue batches)
    const std::shared_ptr<BackendPeer> link = it->second.link;
    RemoveLocked(id, absl::StrFormat("stopped answering (a batch %.0f ms past its planned end)",
                                     ToMillis(options_.detect_after)));
    Send<pb::BackendDown>(link, [](pb::BackendDown* d) { d->set_rejoin(true); });
  }
  detect_timer_ = locked_clock_.ScheduleAfter(std::max<Duration>(options_.detect_after / 4, kMillisecond),
                                              [this] { DetectTick(); });
}

void SchedulerNode::ReportTick() {
  SendReportLocked();
  report_timer_ = locked_clock_.ScheduleAfter(options_.report_every, [this] { ReportTick(); });
}

std::optional<SchedulerNode::AutoscaleState> SchedulerNode::Autoscaling() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (autoscaler_ == nullptr && task_scaler_ == nullptr) return std::nullopt;
  AutoscaleState s;
  if (autoscaler_) {
    s.wanted = autoscaler_->requested();
    s.up = autoscaler_->up();
  } else {
    // Each variant's instances paid for (up or on their way); the groups
    // of no variant are not scaled (-1).
    s.groups.assign(slots_.empty() ? 0 : slots_.back().group + 1, -1);
    const std::vector<TaskVariant>& variants = options_.model_less->task.variants;
    for (size_t j = 0; j < variants.size(); ++j) {
      const int g = slots_[variants[j].first_gpu].group;
      const int paid = task_scaler_->paid(static_cast<int>(j));
      s.groups[g] = std::max(s.groups[g], 0) + paid;
      s.wanted += paid;
    }
    for (const Slot& slot : slots_) s.up += s.groups[slot.group] >= 0 && slot.wanted && !slot.backend.empty();
  }
  for (const auto& [id, m] : members_) {  // of the scaled groups (a stateful group's backups are not spare)
    if (m.gpu < 0 && (s.groups.empty() || s.groups[m.group] >= 0)) s.spares.push_back(id);
  }
  std::sort(s.spares.begin(), s.spares.end());
  return s;
}

SchedulerNode::Membership SchedulerNode::membership() const {
  std::lock_guard<std::mutex> lock(mu_);
  Membership s;
  for (const auto& [id, m] : members_) ++(m.gpu >= 0 ? s.backends : s.spares);
  for (const FrontendState& f : frontends_) s.frontends += f.link != nullptr;
  return s;
}

}  // namespace tutti
