#include "tutti/distributed/scheduler_node.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace pb = ::tutti::internal;

SchedulerNode::SchedulerNode(ClusterSpec spec, Options options, Clock* clock)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      clock_(clock),
      locked_clock_(clock, [this] { Flush(); }),
      mu_(locked_clock_.mu()),
      listener_([this](Batch b) { OnDispatch(std::move(b)); }, [this](const Request& r) { OnDrop(r); }),
      next_batch_(static_cast<uint64_t>(clock->Now())) {  // distinct from a previous leader's ids
  local_index_.resize(spec_.models.size());
  const std::vector<SubCluster> subs = spec_.EffectiveSubClusters();
  for (int g = 0; g < static_cast<int>(subs.size()); ++g) {
    for (size_t i = 0; i < subs[g].models.size(); ++i) local_index_[subs[g].models[i]] = static_cast<int>(i);
    for (int i = 0; i < subs[g].num_gpus; ++i) slots_.push_back(Slot{g, ""});
  }
}

SchedulerNode::~SchedulerNode() {
  std::unique_lock<std::mutex> lock(mu_);
  locked_clock_.Close(lock);
  scheduler_.reset();
  lock.unlock();
  for (auto& f : frontends_) f->rejects->WaitIdle();
}

absl::Status SchedulerNode::Lead(const std::vector<BackendInfo>& backends) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    TUTTI_ASSIGN_OR_RETURN(scheduler_, CreateScheduler(options_.policy, spec_, options_.scheduler, &locked_clock_,
                                                       &listener_));
    for (GpuId g = 0; g < static_cast<GpuId>(slots_.size()); ++g) {
      TUTTI_RETURN_IF_ERROR(scheduler_->SetGpuUp(g, false, 0));
    }
  }
  for (const BackendInfo& b : backends) AddBackend(b);
  return absl::OkStatus();
}

void SchedulerNode::SetAddress(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  address_ = address;
}

bool SchedulerNode::leading() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_ != nullptr;
}

void SchedulerNode::AddBackend(const BackendInfo& backend) {
  if (backend.group < 0 || backend.group > slots_.back().group) return;  // slots are in group order
  // Rebuilding GPU state: how long is it busy with work it already holds
  // (from a previous leader)? A backend that does not answer is not added.
  pb::BackendState state;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(GrpcDeadline(options_.rpc_timeout));
    if (!backends_stubs_.Get(backend.address)->GetState(&ctx, pb::GetStateRequest(), &state).ok()) return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (scheduler_ == nullptr || members_.contains(backend.id)) return;
    Member& m = members_[backend.id];
    m.info = backend;
    AssignLocked(m, Micros(state.busy_for_us()));
  }
  Flush();
}

void SchedulerNode::AssignLocked(Member& member, Duration busy_for) {
  for (GpuId g = 0; g < static_cast<GpuId>(slots_.size()); ++g) {
    Slot& slot = slots_[g];
    if (slot.group != member.info.group || !slot.backend.empty()) continue;
    slot.backend = member.info.id;
    member.gpu = g;
    (void)scheduler_->SetGpuUp(g, true, clock_->Now() + busy_for);
    return;
  }
  member.gpu = -1;  // a spare until a slot of its group frees
}

void SchedulerNode::RemoveBackend(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RemoveLocked(id, "left the cluster");
  }
  Flush();
}

void SchedulerNode::RemoveLocked(const std::string& id, const std::string& why) {
  auto it = members_.find(id);
  if (it == members_.end() || scheduler_ == nullptr) return;
  const GpuId gpu = it->second.gpu;
  const int group = it->second.info.group;
  members_.erase(it);
  if (gpu < 0) return;
  slots_[gpu].backend.clear();
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
  // A spare of the same group takes the slot.
  for (auto& [spare_id, m] : members_) {
    if (m.gpu < 0 && m.info.group == group) {
      AssignLocked(m, 0);
      break;
    }
  }
}

int SchedulerNode::FrontendIndex(const std::string& address) {
  auto [it, inserted] = frontend_index_.emplace(address, static_cast<int>(frontends_.size()));
  if (!inserted) return it->second;
  auto link = std::make_unique<FrontendLink>();
  link->address = address;
  pb::Frontend::Stub* stub = frontend_stubs_.Get(address);
  const Duration timeout = options_.rpc_timeout;
  link->rejects = std::make_unique<Coalescer<uint64_t>>(
      [stub, timeout](std::vector<uint64_t> ids, std::function<void()> done) {
        pb::RejectRequest req;
        for (uint64_t id : ids) req.add_ids(id);
        req.set_message("the latency objective of this request cannot be met; the scheduler dropped it");
        CallAsync<pb::RejectReply>(
            timeout, std::move(req), [stub](auto... a) { stub->async()->Reject(a...); },
            [done](const grpc::Status&, pb::RejectReply&) { done(); });  // a frontend that is gone needs no answer
      });
  frontends_.push_back(std::move(link));
  return it->second;
}

grpc::ServerUnaryReactor* SchedulerNode::Submit(grpc::CallbackServerContext* context,
                                                const pb::SubmitRequest* request, pb::SubmitReply*) {
  for (const pb::RequestMeta& m : request->requests()) {
    if (m.model() < 0 || m.model() >= static_cast<int>(spec_.models.size())) {
      return FinishUnary(context, absl::InvalidArgumentError(absl::StrCat("unknown model id ", m.model())));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (scheduler_ == nullptr) {
      return FinishUnary(context, absl::UnavailableError("this scheduler is a spare, not the leader"));
    }
    const int frontend = FrontendIndex(request->frontend());
    const Time now = clock_->Now();
    for (const pb::RequestMeta& m : request->requests()) {
      const Request r{next_request_++, m.model(), now, now + Micros(m.budget_us())};
      origins_[r.id] = Origin{frontend, m.id()};
      scheduler_->Submit(r);
    }
  }
  Flush();
  return FinishUnary(context);
}

void SchedulerNode::OnDispatch(Batch batch) {
  const uint64_t batch_id = next_batch_++;
  const Slot& slot = slots_[batch.gpu];
  const std::string backend_id = slot.backend;
  const std::string address = members_.at(backend_id).info.address;
  pb::BatchPlan plan;
  plan.set_batch_id(batch_id);
  plan.set_model(local_index_[batch.model]);
  plan.set_start_in_us(std::max<int64_t>(0, ToMicros(batch.exec_at - clock_->Now())));
  plan.set_latency_us(ToMicros(batch.latency));
  plan.set_scheduler(address_);
  for (const Request& r : batch.requests) {
    const Origin& o = origins_.at(r.id);
    pb::PlannedRequest* p = plan.add_requests();
    p->set_frontend(frontends_[o.frontend]->address);
    p->set_id(o.id);
  }
  in_flight_[batch_id] = InFlight{batch.gpu, std::move(batch.requests)};
  pb::Backend::Stub* stub = backends_stubs_.Get(address);
  outbox_.push_back([this, stub, backend_id, plan = std::move(plan)]() mutable {
    CallAsync<pb::ExecuteReply>(
        options_.rpc_timeout, std::move(plan), [stub](auto... a) { stub->async()->Execute(a...); },
        [this, backend_id](const grpc::Status& s, pb::ExecuteReply&) {
          if (s.ok()) return;
          {
            std::lock_guard<std::mutex> lock(mu_);
            RemoveLocked(backend_id, absl::StrCat("unreachable: ", s.error_message()));
          }
          Flush();
        });
  });
}

void SchedulerNode::OnDrop(const Request& r) {
  auto it = origins_.find(r.id);
  if (it == origins_.end()) return;
  const Origin o = it->second;
  origins_.erase(it);
  Coalescer<uint64_t>* rejects = frontends_[o.frontend]->rejects.get();
  outbox_.push_back([rejects, id = o.id] { rejects->Add(id); });
}

grpc::ServerUnaryReactor* SchedulerNode::BatchDone(grpc::CallbackServerContext* context,
                                                   const pb::BatchDoneRequest* request, pb::BatchDoneReply*) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = in_flight_.find(request->batch_id());
    if (it != in_flight_.end() && scheduler_ != nullptr) {
      for (const Request& r : it->second.requests) origins_.erase(r.id);
      const GpuId gpu = it->second.gpu;
      in_flight_.erase(it);
      scheduler_->OnBatchDone(gpu);
    }
  }
  Flush();
  return FinishUnary(context);
}

// One thread flushes at a time, so plans leave in dispatch order; work
// queued meanwhile by other threads is drained by that thread.
void SchedulerNode::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (flushing_) return;
  flushing_ = true;
  while (!outbox_.empty()) {
    std::vector<std::function<void()>> work;
    work.swap(outbox_);
    lock.unlock();
    for (auto& w : work) w();
    lock.lock();
  }
  flushing_ = false;
}

SchedulerNode::Membership SchedulerNode::membership() const {
  std::lock_guard<std::mutex> lock(mu_);
  Membership s;
  for (const auto& [id, m] : members_) ++(m.gpu >= 0 ? s.backends : s.spares);
  return s;
}

}  // namespace tutti
