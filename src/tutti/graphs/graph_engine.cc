#include "tutti/graphs/graph_engine.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/planner/latency_split.h"

namespace tutti {

std::vector<double> MakeGraphShares(const GraphSpec& graph, const ClusterSpec& spec, bool even) {
  std::vector<const LatencyProfile*> profiles;
  std::vector<int> parents;
  for (const GraphSpec::Step& s : graph.steps) {
    profiles.push_back(&spec.models[s.model].profile);
    parents.push_back(s.input_from);
  }
  const std::vector<double> gammas(graph.steps.size(), 1.0);
  const Duration objective = std::max<Duration>(graph.objective, 100);
  absl::StatusOr<LatencySplitResult> split =
      SplitOverProfiles(profiles, parents, gammas, 1, objective, objective / 100, even);
  if (!even && (!split.ok() || std::isinf(split->gpus))) {
    split = SplitOverProfiles(profiles, parents, gammas, 1, objective, 0, /*even=*/true);
  }
  std::vector<double> shares;
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    shares.push_back(split.ok() ? static_cast<double>(split->budgets[i]) / static_cast<double>(objective)
                                : 1.0 / static_cast<double>(graph.steps.size()));
  }
  return shares;
}

// One graph request under way.
struct GraphEngine::Run {
  int graph;
  Time arrival;
  Time deadline;
  Duration objective;
  InferenceCallback done;
};

GraphEngine::GraphEngine(InferenceEngine* inner, std::vector<std::string> model_names, std::vector<GraphSpec> graphs)
    : inner_(inner),
      model_names_(std::move(model_names)),
      inner_models_(static_cast<int>(model_names_.size())),
      graphs_(std::move(graphs)),
      counters_(graphs_.size()) {
  for (const GraphSpec& g : graphs_) {
    std::vector<int>& next = next_.emplace_back(g.steps.size(), -1);
    std::vector<int> parents;
    for (size_t i = 0; i < g.steps.size(); ++i) {
      parents.push_back(g.steps[i].input_from);
      if (parents.back() >= 0) next[parents.back()] = static_cast<int>(i);
    }
    cumulative_.push_back(DueShares(parents, g.shares));  // the output step at the end
  }
  for (size_t g = 0; g < graphs_.size(); ++g) {
    for (size_t i = 0; i < graphs_[g].steps.size(); ++i) {
      counters_[g].steps.push_back({model_names_[graphs_[g].steps[i].model], cumulative_[g][i]});
    }
  }
}

absl::StatusOr<std::unique_ptr<GraphEngine>> GraphEngine::Create(InferenceEngine* inner, const ClusterSpec& inner_spec,
                                                                 std::vector<GraphSpec> graphs) {
  const int models = static_cast<int>(inner_spec.models.size());
  for (const GraphSpec& g : graphs) {
    if (g.steps.empty() || g.shares.size() != g.steps.size()) {
      return absl::InvalidArgumentError(absl::StrCat("graph '", g.name, "': one share per step, and a step at least"));
    }
    for (size_t i = 0; i < g.steps.size(); ++i) {
      const GraphSpec::Step& s = g.steps[i];
      if (s.model < 0 || s.model >= models) {
        return absl::InvalidArgumentError(absl::StrCat("graph '", g.name, "': step ", i, " runs unknown model ", s.model));
      }
      if (s.input_from < -1 || s.input_from >= static_cast<int>(i)) {
        return absl::InvalidArgumentError(absl::StrCat("graph '", g.name, "': step ", i, " reads no earlier step"));
      }
    }
  }
  std::vector<std::string> names;
  for (const ModelSpec& m : inner_spec.models) names.push_back(m.name);
  return std::unique_ptr<GraphEngine>(new GraphEngine(inner, std::move(names), std::move(graphs)));
}

absl::Status GraphEngine::Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) {
  const int g = model - inner_models_;
  if (g < 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return absl::UnavailableError("the server is shutting down");
    }
    return inner_->Submit(model, std::move(input), objective, std::move(done));
  }
  if (g >= static_cast<int>(graphs_.size())) return absl::NotFoundError(absl::StrCat("unknown model id ", model));
  const GraphSpec& graph = graphs_[g];
  if (static_cast<int64_t>(input.size()) != graph.input_elements) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", graph.name, "' takes ", graph.input_elements,
                                                   " input values, got ", input.size()));
  }
  if (objective < 0) return absl::InvalidArgumentError("the latency objective must not be negative");
  if (objective == 0) objective = graph.objective;
  const Time now = inner_->Now();
  auto run = std::make_shared<Run>(Run{g, now, now + objective, objective, std::move(done)});
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return absl::UnavailableError("the server is shutting down");
    ++in_flight_;
  }
  absl::Status s = StartStep(run, 0, std::move(input));
  if (!s.ok()) {  // refused at once: the caller hears it, `done` is never called
    std::lock_guard<std::mutex> lock(mu_);
    if (--in_flight_ == 0) idle_.notify_all();
  }
  return s;
}

Time GraphEngine::DueOf(const Run& run, int step) const {
  return run.arrival +
         static_cast<Duration>(std::llround(cumulative_[run.graph][step] * static_cast<double>(run.objective)));
}

absl::Status GraphEngine::StartStep(const std::shared_ptr<Run>& run, int i, std::vector<float> input) {
  const GraphSpec::Step& step = graphs_[run->graph].steps[i];
  const Duration left = DueOf(*run, i) - inner_->Now();
  if (left <= 0) {
    return absl::DeadlineExceededError("its share of the latency objective had run out before it could start");
  }
  return inner_->Submit(step.model, std::move(input), left,
                        [this, run, i](InferenceOutcome outcome) { OnStep(run, i, std::move(outcome)); });
}

void GraphEngine::CountStep(const Run& run, int i, const InferenceOutcome& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  CountOutcome(outcome.status, outcome.finished > DueOf(run, i), &counters_[run.graph].steps[i]);
}

void GraphEngine::OnStep(const std::shared_ptr<Run>& run, int i, InferenceOutcome outcome) {
  const GraphSpec& graph = graphs_[run->graph];
  CountStep(*run, i, outcome);
  const int next = next_[run->graph][i];
  if (outcome.status.ok() && next >= 0) {
    absl::Status s = StartStep(run, next, std::move(outcome.output));
    if (s.ok()) return;
    outcome.status = s;  // the next step's outcome: refused before it ran
    i = next;
    CountStep(*run, i, outcome);
  }
  if (!outcome.status.ok()) {
    outcome.status = absl::Status(outcome.status.code(),
                                  absl::StrCat("graph '", graph.name, "', step ", i, " ('",
                                               model_names_[graph.steps[i].model], "'): ", outcome.status.message()));
  }
  Finish(run, std::move(outcome));
}

void GraphEngine::Finish(const std::shared_ptr<Run>& run, InferenceOutcome outcome) {
  // Judged against the whole objective; the batch's deadline keeps its
  // distance to the answer's, for the inner engine's response delays.
  outcome.batch_deadline += run->deadline - outcome.deadline;
  outcome.arrival = run->arrival;
  outcome.deadline = run->deadline;
  if (outcome.status.ok()) outcome.late = outcome.finished > run->deadline;
  const absl::Status status = outcome.status;
  const bool late = outcome.late;
  run->done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  CountOutcome(status, late, &counters_[run->graph]);
  if (--in_flight_ == 0) idle_.notify_all();
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

}  // namespace tutti
