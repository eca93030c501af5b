#include "tutti/distributed/backend_node.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace tutti {

namespace pb = ::tutti::internal;

// One plan on its way through the backend.
struct BackendNode::Job {
  pb::BatchPlan plan;
  Time start_at = 0;
  std::mutex mu;
  int fetches_left = 0;
  absl::flat_hash_map<uint64_t, std::string> inputs;  // by plan position, the bytes fetched
  std::vector<int> members;  // plan positions whose inputs came, in plan order
};

BackendNode::BackendNode(std::string id, int group, std::unique_ptr<Executor> executor,
                         std::vector<InferenceCore::ModelShape> shapes, Clock* clock, Duration rpc_timeout)
    : id_(std::move(id)),
      group_(group),
      executor_(std::move(executor)),
      shapes_(std::move(shapes)),
      clock_(clock),
      rpc_timeout_(rpc_timeout) {}

BackendNode::~BackendNode() { WaitIdle(); }

void BackendNode::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return held_ == 0; });
}

grpc::ServerUnaryReactor* BackendNode::Execute(grpc::CallbackServerContext* context, const pb::BatchPlan* plan,
                                               pb::ExecuteReply*) {
  if (plan->model() < 0 || plan->model() >= static_cast<int>(shapes_.size()) || plan->requests_size() == 0) {
    return FinishUnary(context, absl::InvalidArgumentError(absl::StrCat("backend ", id_, " holds no model ",
                                                                        plan->model(), " or the plan is empty")));
  }
  auto job = std::make_shared<Job>();
  job->plan = *plan;
  job->start_at = clock_->Now() + Micros(plan->start_in_us());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++held_;
    busy_until_ = std::max(busy_until_, job->start_at) + Micros(plan->latency_us());
  }
  // Acknowledged now; `plan` dies with the RPC, so below only job->plan.
  grpc::ServerUnaryReactor* reactor = FinishUnary(context);
  plan = &job->plan;

  // Pull the inputs: one FetchInputs per frontend.
  absl::flat_hash_map<std::string, std::vector<int>> by_frontend;
  for (int i = 0; i < plan->requests_size(); ++i) by_frontend[plan->requests(i).frontend()].push_back(i);
  job->fetches_left = static_cast<int>(by_frontend.size());
  for (auto& [frontend, positions] : by_frontend) {
    pb::FetchRequest req;
    absl::flat_hash_map<uint64_t, int> position_of;
    for (int i : positions) {
      req.add_ids(plan->requests(i).id());
      position_of[plan->requests(i).id()] = i;
    }
    pb::Frontend::Stub* stub = frontends_.Get(frontend);
    CallAsync<pb::FetchReply>(rpc_timeout_, std::move(req), [stub](auto... a) { stub->async()->FetchInputs(a...); },
                              [this, job, position_of](const grpc::Status& s, pb::FetchReply& reply) {
                                bool last;
                                {
                                  std::lock_guard<std::mutex> lock(job->mu);
                                  if (s.ok()) {
                                    for (pb::Input& in : *reply.mutable_inputs()) {
                                      auto p = position_of.find(in.id());
                                      if (p != position_of.end()) job->inputs[p->second] = std::move(*in.mutable_values());
                                    }
                                  }
                                  last = --job->fetches_left == 0;
                                }
                                if (last) Run(job);
                              });
  }
  return reactor;
}

void BackendNode::Run(std::shared_ptr<Job> job) {
  const InferenceCore::ModelShape& shape = shapes_[job->plan.model()];
  ExecBatch batch;
  batch.model = job->plan.model();
  batch.start_at = job->start_at;
  for (int i = 0; i < job->plan.requests_size(); ++i) {
    auto it = job->inputs.find(i);
    if (it == job->inputs.end() ||
        static_cast<int64_t>(it->second.size()) != shape.input_elements * static_cast<int64_t>(sizeof(float))) {
      continue;  // answered meanwhile, or its frontend is gone
    }
    const size_t at = batch.input.size();
    batch.input.resize(at + shape.input_elements);
    std::memcpy(batch.input.data() + at, it->second.data(), it->second.size());  // FP32 bytes, as sent
    job->members.push_back(i);
  }
  job->inputs.clear();
  batch.size = static_cast<int>(job->members.size());
  if (batch.size == 0) {
    ExecResult nothing;
    nothing.started = nothing.finished = clock_->Now();
    return Finish(std::move(job), std::move(nothing));
  }
  executor_->Run(std::move(batch), [this, job](ExecResult result) { Finish(job, std::move(result)); });
}

void BackendNode::Finish(std::shared_ptr<Job> job, ExecResult result) {
  const int64_t per_item = shapes_[job->plan.model()].output_elements;
  const int n = static_cast<int>(job->members.size());
  if (result.status.ok() && static_cast<int64_t>(result.output.size()) != n * per_item) {
    result.status = absl::InternalError(
        absl::StrCat("executor returned ", result.output.size(), " values for ", n, " items of ", per_item));
  }
  // Push the outcomes: one Deliver per frontend.
  absl::flat_hash_map<std::string, pb::DeliverRequest> deliveries;
  for (int k = 0; k < n; ++k) {
    const pb::PlannedRequest& r = job->plan.requests(job->members[k]);
    pb::Outcome* o = deliveries[r.frontend()].add_outcomes();
    o->set_id(r.id());
    o->set_code(static_cast<int>(result.status.code()));
    o->set_message(std::string(result.status.message()));
    o->set_emulated(result.emulated);
    o->set_compute_us(ToMicros(result.finished - result.started));
    o->set_batch_size(n);
    if (result.status.ok()) o->set_output(FloatsToBytes(result.output.data() + k * per_item, per_item));
  }
  for (auto& [frontend, req] : deliveries) {
    pb::Frontend::Stub* stub = frontends_.Get(frontend);
    CallAsync<pb::DeliverReply>(rpc_timeout_, std::move(req), [stub](auto... a) { stub->async()->Deliver(a...); },
                                [](const grpc::Status&, pb::DeliverReply&) {});  // a frontend that is gone needs none
  }
  pb::BatchDoneRequest done;
  done.set_batch_id(job->plan.batch_id());
  done.set_backend(id_);
  done.set_ok(result.status.ok());
  pb::Scheduler::Stub* scheduler = schedulers_.Get(job->plan.scheduler());
  CallAsync<pb::BatchDoneReply>(rpc_timeout_, std::move(done),
                                [scheduler](auto... a) { scheduler->async()->BatchDone(a...); },
                                [](const grpc::Status&, pb::BatchDoneReply&) {});  // a dead leader's successor asked us
  std::lock_guard<std::mutex> lock(mu_);
  if (--held_ == 0) idle_.notify_all();
}

grpc::ServerUnaryReactor* BackendNode::GetState(grpc::CallbackServerContext* context, const pb::GetStateRequest*,
                                                pb::BackendState* reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reply->set_backend(id_);
    reply->set_group(group_);
    reply->set_busy_for_us(std::max<int64_t>(0, ToMicros(busy_until_ - clock_->Now())));
    reply->set_batches(held_);
  }
  return FinishUnary(context);
}

}  // namespace tutti
