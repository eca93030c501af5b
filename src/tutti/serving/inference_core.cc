#include "tutti/serving/inference_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

InferenceCore::InferenceCore(ClusterSpec spec, std::vector<ModelShape> shapes,
                             std::vector<std::unique_ptr<Executor>> executors, Clock* clock)
    : spec_(std::move(spec)),
      shapes_(std::move(shapes)),
      executors_(std::move(executors)),
      clock_(clock),
      locked_clock_(std::make_unique<SerializedClock>(
          clock, [this] { Flush(); },
          [this](Time when) {
            const Time now = clock_->Now();
            delays_->Record(Delay::kTimer, now, now - when);
          })),
      mu_(locked_clock_->mu()),
      table_(&spec_, &shapes_),
      busy_(executors_.size(), 0),
      created_(clock->Now()) {
  local_index_ = spec_.LocalIndex();
  if (spec_.memory.limited()) held_.assign(spec_.models.size(), std::vector<bool>(executors_.size(), false));
  listener_ = std::make_unique<CallbackListener>(
      [this](Batch b) { OnDispatch(std::move(b)); }, [this](const Request& r, DropReason) { OnDrop(r); },
      [this](const Load& load) { OnLoad(load); });
}

absl::StatusOr<std::unique_ptr<InferenceCore>> InferenceCore::Create(
    ClusterSpec spec, std::vector<ModelShape> shapes, std::vector<std::unique_ptr<Executor>> executors,
    const Options& options, Clock* clock) {
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(spec));
  if (shapes.size() != spec.models.size()) {
    return absl::InvalidArgumentError(absl::StrCat(shapes.size(), " model shapes for ",
                                                   spec.models.size(), " models"));
  }
  if (static_cast<int>(executors.size()) != spec.num_gpus()) {
    return absl::InvalidArgumentError(absl::StrCat(executors.size(), " executors for ",
                                                   spec.num_gpus(), " GPUs"));
  }
  const int models = static_cast<int>(spec.models.size());
  std::vector<std::shared_ptr<BatchStage>> stages(models);
  for (const auto& [model, stage] : options.stages) {
    if (model < 0 || model >= models || stage == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("a batch stage for unknown model ", model));
    }
    if (stages[model] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("two batch stages for model '", spec.models[model].name, "'"));
    }
    stages[model] = stage;
  }
  std::unique_ptr<InferenceCore> core(
      new InferenceCore(std::move(spec), std::move(shapes), std::move(executors), clock));
  core->stages_ = std::move(stages);
  InferenceCore* c = core.get();
  StagedBatches<NoExtra>::Hooks hooks;
  hooks.submit_internal = [c](ModelId model, std::vector<float> input, Time deadline,
                              std::function<void(InferenceOutcome)> done) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    c->internal_.push_back({model, std::move(input), deadline, std::move(done)});
  };
  // The clock runs it under mu_, then Flush() delivers what it answered.
  hooks.schedule_after = [c](Duration delay, std::function<void()> fn) {
    c->locked_clock_->ScheduleAfter(delay, [c, fn = std::move(fn)]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      fn();
      c->QueueStageAnswers();
    });
  };
  {
    std::lock_guard<std::mutex> lock(c->mu_);
    c->staged_ = std::make_unique<StagedBatches<NoExtra>>(&c->table_, &c->stages_, clock, std::move(hooks));
  }
  core->delays_ = std::make_unique<DelayModel>(
      core->spec_, options.delays, DelayPlan{core->spec_.delays, options.scheduler.frontrun_slack, {}});
  TUTTI_ASSIGN_OR_RETURN(core->scheduler_,
                         CreateScheduler(options.policy, core->spec_, options.scheduler,
                                         core->locked_clock_.get(), core->listener_.get()));
  core->delays_->Start(core->locked_clock_.get(), [c](const DelayPlan& plan) { c->scheduler_->SetDelayPlan(plan); });
  return core;
}

InferenceCore::~InferenceCore() {
  std::unique_lock<std::mutex> lock(mu_);
  locked_clock_->Close(lock);
  scheduler_.reset();  // cancels its timers
  delays_->Stop();
}

absl::Status InferenceCore::Submit(ModelId model, std::vector<float> input, Duration objective,
                                   InferenceCallback done) {
  return SubmitWith(model, {}, std::move(input), objective, std::move(done));
}

absl::Status InferenceCore::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                       Duration objective, InferenceCallback done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    TUTTI_ASSIGN_OR_RETURN(const Time deadline, table_.Admit(model, input.size(), objective, clock_->Now()));
    SubmitLocked(model, std::move(input), deadline, std::move(done), context);
  }
  Flush();
  return absl::OkStatus();
}

void InferenceCore::SubmitLocked(ModelId model, std::vector<float> input, Time deadline, InferenceCallback done,
                                 const RequestContext& context) {
  const Time now = clock_->Now();
  const Request r{table_.Add(model, std::move(input), std::move(done), now, deadline), model, now, deadline,
                  context.level, context.delay_at};
  if (context.sequence.id != 0 || context.cancel != nullptr) {  // most requests carry neither
    Pending& p = *table_.Find(r.id);
    p.sequence = context.sequence;
    p.cancel = context.cancel;
  }
  delays_->RecordArrival(model, r.arrival);
  scheduler_->Submit(r);
}

void InferenceCore::OnDrop(const Request& r) {
  Answers answers;
  table_.Answer(r.id, Table::ErrorOutcome(*table_.Find(r.id), DroppedError(spec_, r.model), clock_->Now()),
                &answers);
  outbox_.push_back([this, answers = std::move(answers)]() mutable { Answer(std::move(answers), 1); });
}

void InferenceCore::OnDispatch(Batch batch) {
  const ModelShape& shape = shapes_[batch.model];
  // Withdrawn: the requests whose cancel flag is set now, unless the batch's
  // stage plans with them or they are of a sequence (whose state must advance).
  const bool withdraws = staged_->stage(batch.model) == nullptr;
  const Time now = clock_->Now();
  Answers cancelled;
  std::vector<uint64_t> ids;
  ids.reserve(batch.requests.size());
  ExecBatch exec;
  exec.model = local_index_[batch.model];
  exec.start_at = batch.exec_at;
  exec.input.reserve(batch.requests.size() * shape.input_elements);
  Time earliest = kInfiniteFuture;
  for (const Request& r : batch.requests) {
    Pending& p = *table_.Find(r.id);
    if (withdraws && p.Withdrawn(now)) {
      table_.Answer(r.id, Table::ErrorOutcome(p, CancelledError(spec_, r.model), now), &cancelled);
      continue;
    }
    earliest = std::min(earliest, p.deadline);
    exec.input.insert(exec.input.end(), p.input.begin(), p.input.end());
    if (p.sequence.id != 0) {
      exec.sequences.resize(ids.size());
      exec.sequences.push_back(p.sequence);
    }
    std::vector<float>().swap(p.input);
    ids.push_back(r.id);
  }
  exec.size = static_cast<int>(ids.size());
  if (!cancelled.empty()) {
    const int64_t n = static_cast<int64_t>(cancelled.size());
    outbox_.push_back([this, answers = std::move(cancelled), n]() mutable { Answer(std::move(answers), n); });
  }
  if (exec.size < static_cast<int>(batch.requests.size())) {  // the GPU's time for those withdrawn is free
    outbox_.push_back([this, gpu = batch.gpu, exec_at = batch.exec_at, remaining = exec.size] {
      std::lock_guard<std::mutex> lock(mu_);
      scheduler_->OnRequestsWithdrawn(gpu, exec_at, remaining);
    });
  }
  if (exec.size == 0) return;
  ModelCounters& c = table_.counters(batch.model);
  ++c.batches;
  c.batched_requests += exec.size;
  auto d = std::make_shared<Dispatched>();
  d->staged = staged_->stage(batch.model) != nullptr ? staged_->Dispatch(batch.model, ids, exec.input) : 0;
  d->ids = std::move(ids);
  d->earliest_deadline = earliest;
  d->trace = {.executor = batch.gpu,
              .model = batch.model,
              .size = exec.size,
              .decided = clock_->Now(),
              .planned_start = batch.exec_at,
              .planned_end = batch.exec_at + spec_.models[batch.model].profile.Latency(exec.size)};
  Executor* executor = executors_[batch.gpu].get();
  outbox_.push_back([this, executor, d = std::move(d), exec = std::move(exec)]() mutable {
    executor->Run(std::move(exec), [this, d = std::move(d)](ExecResult result) { OnExecuted(*d, std::move(result)); });
  });
}

void InferenceCore::OnLoad(const Load& load) {
  ExecLoad exec{local_index_[load.model], load.start, load.duration, {}};
  for (ModelId m : load.evicted) exec.evicted.push_back(local_index_[m]);
  ++loads_;
  for (ModelId m : load.evicted) held_[m][load.gpu] = false;
  held_[load.model][load.gpu] = true;
  // Through the outbox, as batches go: it reaches the executor before any
  // batch that relies on it.
  outbox_.push_back([executor = executors_[load.gpu].get(), exec = std::move(exec)] { executor->Load(exec); });
}

void InferenceCore::OnExecuted(const Dispatched& d, ExecResult result) {
  BatchTrace trace = d.trace;
  const ModelId model = trace.model;
  const int gpu = trace.executor;
  const Time decided = trace.decided;
  const int64_t n = static_cast<int64_t>(d.ids.size());
  // Learnt now, with the batch's end: stamped so (the simulator's too).
  delays_->Record(Delay::kDispatch, result.finished, result.received - decided);
  if (result.status.ok()) {
    delays_->RecordBatch(gpu, model, static_cast<int>(n), result.ready, result.started, result.finished);
  }
  const int64_t per_item = shapes_[model].output_elements;
  if (result.status.ok() && static_cast<int64_t>(result.output.size()) != n * per_item) {
    result.status = absl::InternalError(
        absl::StrCat("executor returned ", result.output.size(), " values for ", n, " items of ", per_item));
  }
  Answers answers;
  int64_t done = 0;
  bool queued_work = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_[gpu] += result.finished - result.started;
    trace.started = result.started;
    trace.finished = result.finished;
    trace.ok = result.status.ok();
    if (traces_.size() == kTraces) traces_.pop_front();
    traces_.push_back(trace);
    scheduler_->OnBatchDone(gpu);
    const uint64_t batch = next_batch_++;
    // The items the stage keeps, it answers (some maybe already).
    const std::vector<bool> deliver =
        d.staged != 0 ? staged_->Executed(d.staged, result) : std::vector<bool>(n, true);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t id = d.ids[i];
      const Pending* p = table_.Find(id);
      if (!deliver[i] || p == nullptr) continue;
      InferenceOutcome out;
      out.status = result.status.ok() && static_cast<int64_t>(result.item_status.size()) == n
                       ? result.item_status[i]
                       : result.status;
      out.emulated = result.emulated;
      out.arrival = p->arrival;
      out.deadline = p->deadline;
      out.started = result.started;
      out.finished = result.finished;
      out.batch_size = static_cast<int>(n);
      out.dispatched = trace.decided;
      out.planned_start = trace.planned_start;
      out.executor = gpu;
      out.released = result.released;
      if (out.status.ok()) {
        out.batch_id = batch;
        out.batch_deadline = d.earliest_deadline;
        out.output.assign(result.output.begin() + i * per_item, result.output.begin() + (i + 1) * per_item);
        out.late = out.finished > out.deadline;
      }
      ++done;
      table_.Answer(id, std::move(out), &answers);
    }
    for (auto& [callback, out] : answers) out.batch_answers = static_cast<int>(answers.size());
    if (d.staged != 0) {
      staged_->ForgetIfFinished(d.staged);
      staged_->TakeAnswers(&answers, &done);
    }
    queued_work = !outbox_.empty() || !internal_.empty();
  }
  // Batches the freed GPU was given (await_completion); before Answer, which
  // may let the core be destroyed.
  if (queued_work) Flush();
  Answer(std::move(answers), done);
}

void InferenceCore::QueueStageAnswers() {
  Answers answers;
  int64_t done = 0;
  staged_->TakeAnswers(&answers, &done);
  if (answers.empty() && done == 0) return;
  outbox_.push_back([this, a = std::move(answers), done]() mutable { Answer(std::move(a), done); });
}

void InferenceCore::Answer(Answers answers, int64_t count) {
  RunAnswers(std::move(answers));
  std::lock_guard<std::mutex> lock(mu_);
  table_.Release(count);
}

// One thread flushes at a time, so executors receive batches in dispatch
// order; work queued meanwhile by other threads is drained by that thread.
void InferenceCore::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (flushing_) return;
  flushing_ = true;
  while (!outbox_.empty() || !internal_.empty()) {
    // Stages' internal requests wait here because a scheduler listener
    // must not call back into the scheduler.
    std::vector<InternalRequest> internal;
    internal.swap(internal_);
    for (InternalRequest& q : internal) {
      SubmitLocked(q.model, std::move(q.input), q.deadline, [this, done = std::move(q.done)](InferenceOutcome o) {
        Answers answers;
        int64_t count = 0;
        bool queued_work = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          done(std::move(o));
          staged_->TakeAnswers(&answers, &count);
          queued_work = !outbox_.empty() || !internal_.empty();
        }
        if (queued_work) Flush();
        Answer(std::move(answers), count);
      });
    }
    std::vector<std::function<void()>> work;
    work.swap(outbox_);
    lock.unlock();
    for (auto& w : work) w();
    lock.lock();
  }
  flushing_ = false;
}

void InferenceCore::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  table_.StopAccepting();
}

void InferenceCore::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  table_.WaitIdle(lock);
}

int64_t InferenceCore::WeightsLoads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loads_;
}

int64_t InferenceCore::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.in_flight();
}

std::vector<ModelCounters> InferenceCore::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelCounters> counters = table_.Counters(stages_);
  if (spec_.memory.limited()) {
    for (size_t m = 0; m < counters.size(); ++m) {
      std::vector<int>& on = counters[m].loaded_on.emplace();
      for (size_t g = 0; g < held_[m].size(); ++g) {
        if (held_[m][g]) on.push_back(static_cast<int>(g));
      }
    }
  }
  return counters;
}

void InferenceCore::OnAnswerWritten(const WrittenAnswer& answer) {
  std::vector<ResponseTracker::Sample> samples;
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers_.Written(answer, clock_->Now(), &samples);
  }
  for (const ResponseTracker::Sample& s : samples) delays_->Record(Delay::kResponse, s.at, s.delay);
}

DelayReport InferenceCore::Delays() const {
  DelayReport report{delays_->options(), delays_->estimates(), delays_->plan(), delays_->histograms()};
  std::lock_guard<std::mutex> lock(mu_);
  report.choices = scheduler_->Choices();
  return report;
}

std::vector<Duration> InferenceCore::BusyTimes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

absl::Status InferenceCore::SetExecutorUp(GpuId executor, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->SetGpuUp(executor, up, clock_->Now());
}

std::vector<BatchTrace> InferenceCore::RecentBatches(Time since) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BatchTrace> out;
  for (const BatchTrace& t : traces_) {
    if (t.finished > since) out.push_back(t);
  }
  return out;
}

std::vector<double> InferenceCore::BusyFractions() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double elapsed = static_cast<double>(std::max<Duration>(1, clock_->Now() - created_));
  std::vector<double> out;
  for (Duration b : busy_) out.push_back(std::min(1.0, static_cast<double>(b) / elapsed));
  return out;
}

}  // namespace tutti
