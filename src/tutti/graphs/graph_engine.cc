#include "tutti/graphs/graph_engine.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/planner/latency_split.h"

namespace tutti {
namespace {

int64_t Argmax(const std::vector<float>& v) {
  return v.empty() ? -1 : std::max_element(v.begin(), v.end()) - v.begin();
}

bool Holds(int64_t chosen, const std::vector<int64_t>& values) {
  return std::find(values.begin(), values.end(), chosen) != values.end();
}

std::vector<int> Outputs(const GraphSpec& g) {
  return g.outputs.empty() ? std::vector<int>{static_cast<int>(g.steps.size()) - 1} : g.outputs;
}

}  // namespace

std::vector<int> StepParents(const GraphSpec& graph) {
  std::vector<int> parents;
  for (const GraphSpec::Step& s : graph.steps) parents.push_back(std::max(s.input_from, s.route_from));
  return parents;
}

std::vector<double> MakeGraphShares(const GraphSpec& graph, const ClusterSpec& spec, double rate) {
  std::vector<const LatencyProfile*> profiles;
  std::vector<double> gammas;
  for (const GraphSpec::Step& s : graph.steps) {
    profiles.push_back(&spec.models[s.model].profile);
    gammas.push_back(s.gamma);
  }
  const std::vector<int> parents = StepParents(graph);
  const Duration objective = std::max<Duration>(graph.objective, 100);
  absl::StatusOr<LatencySplitResult> split =
      SplitOverProfiles(profiles, parents, gammas, rate, objective, objective / 100, graph.even_split,
                        graph.step_overhead);
  if (!graph.even_split && (!split.ok() || std::isinf(split->gpus))) {
    split = SplitOverProfiles(profiles, parents, gammas, rate, objective, 0, /*even=*/true);
  }
  std::vector<double> shares;
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    shares.push_back(split.ok() ? static_cast<double>(split->budgets[i]) / static_cast<double>(objective)
                                : 1.0 / static_cast<double>(graph.steps.size()));
  }
  // What no path needs is given out: every share grows in proportion until
  // the longest path uses the whole objective. A budget larger than the
  // split's never needs more GPUs (T(k) does not fall as k grows), and
  // where the profiles want little — cheap steps, a low rate — a step
  // would otherwise be due within milliseconds of the request's arrival
  // with most of the objective unused, and a scheduling hiccup of that
  // size would drop it.
  const std::vector<double> path = PathShares(parents, shares);
  const double longest = path.empty() ? 0 : *std::max_element(path.begin(), path.end());
  if (longest > 0 && longest < 1) {
    for (double& share : shares) share /= longest;
  }
  return shares;
}

// One graph request under way.
struct GraphEngine::Run {
  enum class State : uint8_t { kWaiting, kRunning, kDone, kSkipped };
  int graph;
  Time arrival;
  Time deadline;
  Duration objective;
  RequestContext context;  // passed to every step (stateful ones keep its sequence; a cancel withdraws the rest)
  std::shared_ptr<const std::vector<double>> due;  // per step, share of the objective
  InferenceCallback done;
  // Traced: per step, its span and its start (each written by the step's
  // start, read by its end).
  std::vector<TraceContext> step_trace;
  std::vector<Time> step_start;

  std::mutex mu;
  std::vector<float> input ABSL_GUARDED_BY(mu);  // the graph's, while a waiting step reads it
  std::vector<State> state ABSL_GUARDED_BY(mu);
  std::vector<std::vector<float>> outputs ABSL_GUARDED_BY(mu);  // while a waiting step reads them
  std::vector<int64_t> chosen ABSL_GUARDED_BY(mu);              // per step: its output's argmax
  int running ABSL_GUARDED_BY(mu) = 0;
  bool answered ABSL_GUARDED_BY(mu) = false;

  Time DueOf(int step) const {
    return arrival + static_cast<Duration>(std::llround((*due)[step] * static_cast<double>(objective)));
  }
};

GraphEngine::GraphEngine(InferenceEngine* inner, ClusterSpec inner_spec, std::vector<GraphSpec> graphs,
                         GraphOptions options)
    : LayeredEngine(inner),
      inner_spec_(std::move(inner_spec)),
      inner_models_(static_cast<int>(inner_spec_.models.size())),
      options_(options),
      graphs_(std::move(graphs)),
      counters_(graphs_.size()),
      windows_(graphs_.size()) {
  for (size_t g = 0; g < graphs_.size(); ++g) {
    const GraphSpec& graph = graphs_[g];
    parents_.push_back(StepParents(graph));
    outputs_.push_back(Outputs(graph));
    shares_.push_back(graph.shares);
    std::vector<double>& gammas = gammas_.emplace_back();
    for (const GraphSpec::Step& s : graph.steps) gammas.push_back(s.gamma);
    std::vector<uint8_t>& decides = decides_.emplace_back(graph.steps.size(), 0);
    for (const GraphSpec::Step& s : graph.steps) {
      if (s.route_from >= 0) decides[s.route_from] = 1;
    }
    if (graph.exit_from >= 0) decides[graph.exit_from] = 1;
    auto due = std::make_shared<const std::vector<double>>(DueShares(parents_[g], graph.shares));
    for (size_t i = 0; i < graph.steps.size(); ++i) {
      ModelCounters::Step& step = counters_[g].steps.emplace_back();
      step.model = inner_spec_.models[graph.steps[i].model].name;
      step.deadline_share = (*due)[i];
    }
    due_.push_back(std::move(due));
    windows_[g].reached.assign(graph.steps.size(), 0);
    resplits_.push_back(0);
  }
}

absl::StatusOr<std::unique_ptr<GraphEngine>> GraphEngine::Create(InferenceEngine* inner, const ClusterSpec& inner_spec,
                                                                 std::vector<GraphSpec> graphs, GraphOptions options) {
  const int models = static_cast<int>(inner_spec.models.size());
  for (const GraphSpec& g : graphs) {
    const int n = static_cast<int>(g.steps.size());
    auto invalid = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("graph '", g.name, "': ", what));
    };
    if (n == 0 || static_cast<int>(g.shares.size()) != n) return invalid("one share per step, and a step at least");
    for (int i = 0; i < n; ++i) {
      const GraphSpec::Step& s = g.steps[i];
      if (s.model < 0 || s.model >= models) return invalid(absl::StrCat("step ", i, " runs unknown model ", s.model));
      if (s.input_from < -1 || s.input_from >= i || s.route_from < -1 || s.route_from >= i) {
        return invalid(absl::StrCat("step ", i, " reads no earlier step"));
      }
      if (!(s.gamma > 0)) return invalid(absl::StrCat("step ", i, " has a γ that is not positive"));
    }
    for (int o : Outputs(g)) {
      if (o < 0 || o >= n) return invalid(absl::StrCat("output step ", o, " is no step"));
    }
    if (g.exit_from < -1 || g.exit_from >= n) return invalid("the early exit reads no step");
  }
  return std::unique_ptr<GraphEngine>(new GraphEngine(inner, inner_spec, std::move(graphs), options));
}

absl::Status GraphEngine::Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) {
  return SubmitWith(model, {}, std::move(input), objective, std::move(done));
}

absl::Status GraphEngine::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                     Duration objective, InferenceCallback done) {
  const int g = model - inner_models_;
  if (g < 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return absl::UnavailableError("the server is shutting down");
    }
    return inner_->SubmitWith(model, context, std::move(input), objective, std::move(done));
  }
  if (g >= static_cast<int>(graphs_.size())) return absl::NotFoundError(absl::StrCat("unknown model id ", model));
  auto run = std::make_shared<Run>();
  const GraphSpec& graph = graphs_[g];
  if (static_cast<int64_t>(input.size()) != graph.input_elements) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", graph.name, "' takes ", graph.input_elements,
                                                   " input values, got ", input.size()));
  }
  if (objective < 0) return absl::InvalidArgumentError("the latency objective must not be negative");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return absl::UnavailableError("the server is shutting down");
    const Time now = inner_->Now();
    run->graph = g;
    run->arrival = now;
    run->objective = objective > 0 ? objective : graph.objective;
    run->deadline = now + run->objective;
    run->context = context;
    run->due = due_[g];
    ++in_flight_;
    MaybeResplit(g);  // before this request: those counted have all reached their first steps
    Window& w = windows_[g];
    if (w.requests++ == 0) w.since = now;
  }
  run->done = std::move(done);
  const size_t n = parents_[g].size();
  if (options_.tracer != nullptr && context.trace.recording()) {
    run->step_trace.resize(n);
    run->step_start.resize(n);
  }
  std::vector<Start> starts;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->input = std::move(input);
    run->state.assign(n, Run::State::kWaiting);
    run->outputs.resize(n);
    run->chosen.assign(n, -1);
    starts = Advance(*run);
  }
  // The first steps read only the graph's input: a refusal of the first is
  // the caller's to hear (and `done` is never called); later ones are
  // answered as step errors.
  const int first_step = starts.front().step;
  absl::Status first = StartStep(run, std::move(starts.front()));
  if (!first.ok()) {
    RecordStep(*run, first_step, first, inner_->Now());
    {
      std::lock_guard<std::mutex> lock(run->mu);
      run->answered = true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (--in_flight_ == 0) idle_.notify_all();
    return first;
  }
  starts.erase(starts.begin());
  StartSteps(run, std::move(starts));
  return absl::OkStatus();
}

std::vector<GraphEngine::Start> GraphEngine::Advance(Run& run) {
  std::vector<Start> starts;
  const GraphSpec& graph = graphs_[run.graph];
  const std::vector<GraphSpec::Step>& steps = graph.steps;
  const std::vector<int>& outputs = outputs_[run.graph];
  const int n = static_cast<int>(steps.size());
  using State = Run::State;
  // Whether a waiting step other than `except` still reads `from`'s output.
  auto read_later = [&](int from, int except) {
    for (int j = 0; j < n; ++j) {
      if (j != except && run.state[j] == State::kWaiting && steps[j].input_from == from) return true;
    }
    return false;
  };
  for (int j = 0; j < n; ++j) {  // producers come first: one pass settles all
    if (run.state[j] != State::kWaiting) continue;
    const GraphSpec::Step& s = steps[j];
    State in = s.input_from < 0 ? State::kDone : run.state[s.input_from];
    State route = s.route_from < 0 ? State::kDone : run.state[s.route_from];
    if (in == State::kSkipped || route == State::kSkipped ||
        (route == State::kDone && s.route_from >= 0 && !Holds(run.chosen[s.route_from], s.route_values))) {
      run.state[j] = State::kSkipped;
      continue;
    }
    if (in != State::kDone || route != State::kDone || run.answered) continue;
    run.state[j] = State::kRunning;
    ++run.running;
    std::vector<float>& source = s.input_from < 0 ? run.input : run.outputs[s.input_from];
    Start start{j, {}};
    const bool merged_later = s.input_from >= 0 && graph.merge != GraphSpec::Merge::kNone &&
                              std::find(outputs.begin(), outputs.end(), s.input_from) != outputs.end();
    if (merged_later || read_later(s.input_from, j)) {
      start.input = source;  // another step reads it too
    } else {
      start.input = std::move(source);
    }
    starts.push_back(std::move(start));
  }
  return starts;
}

void GraphEngine::StartSteps(const std::shared_ptr<Run>& run, std::vector<Start> starts) {
  for (Start& start : starts) {
    const int step = start.step;
    absl::Status s = StartStep(run, std::move(start));
    if (!s.ok()) OnStep(run, step, InferenceOutcome{.status = s, .finished = inner_->Now()});
  }
}

absl::Status GraphEngine::StartStep(const std::shared_ptr<Run>& run, Start start) {
  const int i = start.step;
  const GraphSpec::Step& step = graphs_[run->graph].steps[i];
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++windows_[run->graph].reached[i];
  }
  RequestContext context = run->context;
  if (!run->step_trace.empty()) {
    context.trace = run->step_trace[i] = Tracer::Child(run->context.trace);
    run->step_start[i] = inner_->Now();
  }
  const Duration left = run->DueOf(i) - inner_->Now();
  if (left <= 0) {
    return absl::DeadlineExceededError("its share of the latency objective had run out before it could start");
  }
  std::vector<float> input;
  if (step.head >= 0) {  // a prefix group's head: its index first
    input.reserve(start.input.size() + 1);
    input.push_back(static_cast<float>(step.head));
    input.insert(input.end(), start.input.begin(), start.input.end());
  } else {
    input = std::move(start.input);
  }
  return inner_->SubmitWith(step.model, context, std::move(input), left,
                            [this, run, i](InferenceOutcome outcome) { OnStep(run, i, std::move(outcome)); });
}

void GraphEngine::RecordStep(const Run& run, int i, const absl::Status& status, Time end) const {
  if (run.step_trace.empty()) return;
  const std::string& model = inner_spec_.models[graphs_[run.graph].steps[i].model].name;
  Span span{run.step_trace[i], absl::StrCat("step ", model), Span::Kind::kInternal, run.step_start[i],
            std::max(run.step_start[i], end)};
  span.attributes = {{"tutti.step", int64_t{i}}, {"tutti.model", model},
                     {"tutti.due_us", static_cast<int64_t>(ToMicros(run.DueOf(i) - run.arrival))}};
  if (!status.ok()) span.error = std::string(status.message());
  options_.tracer->Record(std::move(span));
}

void GraphEngine::CountStep(const Run& run, int i, const InferenceOutcome& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  CountOutcome(outcome.status, outcome.finished > run.DueOf(i), &counters_[run.graph].steps[i]);
}

void GraphEngine::OnStep(const std::shared_ptr<Run>& run, int i, InferenceOutcome outcome) {
  const GraphSpec& graph = graphs_[run->graph];
  CountStep(*run, i, outcome);
  RecordStep(*run, i, outcome.status, outcome.finished);
  if (!run->step_trace.empty()) {
    RecordRequestSpans(*options_.tracer, run->step_trace[i], inner_spec_.models[graph.steps[i].model].name, outcome);
  }
  const std::vector<int>& outputs = outputs_[run->graph];
  std::vector<Start> starts;
  bool answer = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    --run->running;
    if (run->answered) return;  // an earlier error answered the request
    if (!outcome.status.ok()) {
      outcome.status = absl::Status(
          outcome.status.code(), absl::StrCat("graph '", graph.name, "', step ", i, " ('",
                                              inner_spec_.models[graph.steps[i].model].name, "'): ",
                                              outcome.status.message()));
      answer = true;
    } else {
      run->state[i] = Run::State::kDone;
      if (decides_[run->graph][i]) run->chosen[i] = Argmax(outcome.output);
      const bool output = std::find(outputs.begin(), outputs.end(), i) != outputs.end();
      if ((graph.exit_from == i && Holds(run->chosen[i], graph.exit_values)) ||
          (output && graph.merge == GraphSpec::Merge::kNone)) {
        answer = true;
      } else {
        run->outputs[i] = std::move(outcome.output);
        starts = Advance(*run);
        if (graph.merge != GraphSpec::Merge::kNone &&
            std::none_of(outputs.begin(), outputs.end(), [&](int o) {
              return run->state[o] == Run::State::kWaiting || run->state[o] == Run::State::kRunning;
            }) &&
            std::any_of(outputs.begin(), outputs.end(), [&](int o) { return run->state[o] == Run::State::kDone; })) {
          outcome.output = Merged(*run);  // the last output has come
          answer = true;
        } else if (starts.empty() && run->running == 0) {  // the routes left no output step to run
          std::vector<std::string> chosen;
          for (size_t j = 0; j < graph.steps.size(); ++j) {
            if (run->chosen[j] >= 0) {
              chosen.push_back(absl::StrCat("step ", j, " ('", inner_spec_.models[graph.steps[j].model].name,
                                            "') chose class ", run->chosen[j]));
            }
          }
          outcome = InferenceOutcome{.status = absl::FailedPreconditionError(absl::StrCat(
                                         "graph '", graph.name, "': no route takes this request (",
                                         absl::StrJoin(chosen, ", "), "), so no step made its output")),
                                     .finished = outcome.finished};
          answer = true;
        }
      }
    }
    if (answer) run->answered = true;
  }
  if (answer) {
    Finish(run, std::move(outcome));
  } else {
    StartSteps(run, std::move(starts));
  }
}

std::vector<float> GraphEngine::Merged(Run& run) const {
  const GraphSpec& graph = graphs_[run.graph];
  std::vector<float> sum;
  int ran = 0;
  for (int o : outputs_[run.graph]) {
    if (run.state[o] != Run::State::kDone) continue;
    std::vector<float>& out = run.outputs[o];
    if (ran++ == 0) {
      sum = std::move(out);
    } else {
      for (size_t k = 0; k < sum.size() && k < out.size(); ++k) sum[k] += out[k];
    }
  }
  if (graph.merge == GraphSpec::Merge::kMean) {
    for (float& v : sum) v /= static_cast<float>(ran);
  }
  return sum;
}

void GraphEngine::Finish(const std::shared_ptr<Run>& run, InferenceOutcome outcome) {
  // Judged against the whole objective; the batch's deadline keeps its
  // distance to the answer's, for the inner engine's response delays.
  outcome.batch_deadline += run->deadline - outcome.deadline;
  outcome.arrival = run->arrival;
  outcome.deadline = run->deadline;
  if (outcome.status.ok()) outcome.late = outcome.finished > run->deadline;
  {
    // Counted before it is answered, so that a client who reads the
    // metrics after its answer finds it there.
    std::lock_guard<std::mutex> lock(mu_);
    CountOutcome(outcome.status, outcome.late, &counters_[run->graph]);
  }
  run->done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  if (--in_flight_ == 0) idle_.notify_all();
}

void GraphEngine::MaybeResplit(int g) {
  Window& w = windows_[g];
  const GraphSpec& graph = graphs_[g];
  if (options_.resplit_every <= 0 || w.requests < options_.resplit_every || graph.even_split) return;
  // γ of a step: the requests that reached it per request that reached its
  // parent (the graph's own, for a first step).
  const std::vector<int>& parents = parents_[g];
  GraphSpec measured = graph;
  bool drifted = false;
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    const int64_t above = parents[i] < 0 ? w.requests : w.reached[parents[i]];
    if (above == 0 || w.reached[i] == 0) continue;  // nothing to learn γ from
    const double gamma = static_cast<double>(w.reached[i]) / static_cast<double>(above);
    measured.steps[i].gamma = gamma;
    drifted |= std::abs(gamma - gammas_[g][i]) > options_.gamma_drift;
  }
  const Duration span = inner_->Now() - w.since;
  if (drifted) {
    const double rate = span > 0 ? static_cast<double>(w.requests) * kSecond / static_cast<double>(span) : 1;
    shares_[g] = MakeGraphShares(measured, inner_spec_, rate);
    for (size_t i = 0; i < graph.steps.size(); ++i) gammas_[g][i] = measured.steps[i].gamma;
    due_[g] = std::make_shared<const std::vector<double>>(DueShares(parents, shares_[g]));
    for (size_t i = 0; i < graph.steps.size(); ++i) counters_[g].steps[i].deadline_share = (*due_[g])[i];
    ++resplits_[g];
  }
  w = Window{0, 0, std::vector<int64_t>(graph.steps.size(), 0)};
}

void GraphEngine::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

void GraphEngine::WaitIdle() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return in_flight_ == 0; });
  }
  inner_->StopAccepting();
  inner_->WaitIdle();
}

int64_t GraphEngine::in_flight() const {
  const int64_t inner = inner_->in_flight();
  std::lock_guard<std::mutex> lock(mu_);
  return inner + in_flight_;
}

std::vector<ModelCounters> GraphEngine::Counters() const {
  std::vector<ModelCounters> out = inner_->Counters();
  std::lock_guard<std::mutex> lock(mu_);
  out.insert(out.end(), counters_.begin(), counters_.end());
  return out;
}

std::vector<GraphSpec> GraphEngine::graphs() const {
  std::vector<GraphSpec> out = graphs_;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t g = 0; g < out.size(); ++g) {
    out[g].shares = shares_[g];
    for (size_t i = 0; i < out[g].steps.size(); ++i) out[g].steps[i].gamma = gammas_[g][i];
  }
  return out;
}

int64_t GraphEngine::resplits(int graph) const {
  std::lock_guard<std::mutex> lock(mu_);
  return resplits_[graph];
}

}  // namespace tutti
