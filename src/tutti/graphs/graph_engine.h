// GraphEngine: serves graph models (Triton's ensembles; platform ensemble in
// the repository) over another InferenceEngine that serves their steps'
// models — InferenceCore in one process, RemoteEngine in distributed mode —
// so a graph runs wherever its steps do.
//
// Model ids: the inner engine's models keep theirs (0 … M−1); graph g is
// model M + g. A request for a graph runs its steps one after another (each
// step's input is the graph's input or an earlier step's output, moved, not
// copied), each submitted to the inner engine with its own sub-deadline:
// the request's arrival plus its objective times the step's cumulative
// share (GraphSpec::shares; see MakeGraphShares for how they are chosen),
// the output step at the end of the objective.
// The answer is the output step's output, judged against the whole
// objective (late if it finished after arrival + objective).
//
// Every accepted graph request is answered exactly once: with its output,
// or with the first error of a step — the inner engine's (its step dropped,
// failed, or refused) prefixed with the graph and the step.
//
// Thread-safety: every method may be called from any thread; the inner
// engine's callbacks may come on any thread.
#ifndef TUTTI_GRAPHS_GRAPH_ENGINE_H_
#define TUTTI_GRAPHS_GRAPH_ENGINE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

struct GraphSpec {
  struct Step {
    ModelId model;   // the inner engine's
    int input_from;  // -1: the graph's input; else an earlier step (in `steps` order)
  };
  std::string name;
  Duration objective = 0;  // when a request gives none
  int64_t input_elements = 0, output_elements = 0;
  std::vector<Step> steps;     // only the steps the output needs, producers first
  std::vector<double> shares;  // per step: its share of the objective (along each path, at most 1 in all)
};

// The steps' shares of the objective: Nexus's latency split (planner/
// latency_split.h) over the steps' latency profiles in `spec`, where each
// step sees every request once (γ = 1); or, with `even`, or when no split
// fits the objective, objective / (steps on the longest path) each.
std::vector<double> MakeGraphShares(const GraphSpec& graph, const ClusterSpec& spec, bool even);

class GraphEngine final : public InferenceEngine {
 public:
  // `inner` serves `inner_spec`'s models and must outlive the engine.
  // Errors: a graph whose steps name unknown models, read a later step, or
  // whose shares do not match its steps.
  static absl::StatusOr<std::unique_ptr<GraphEngine>> Create(InferenceEngine* inner, const ClusterSpec& inner_spec,
                                                             std::vector<GraphSpec> graphs);

  // InferenceEngine. Counters(): the inner engine's models, then the graphs'.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override;
  // New requests, for graphs and the inner models alike, are refused; graphs
  // under way finish their steps. WaitIdle() waits for them, then for the
  // inner engine (which it then stops).
  void StopAccepting() override;
  void WaitIdle() override;
  int64_t in_flight() const override;  // the inner engine's, plus graphs between steps
  std::vector<ModelCounters> Counters() const override;
  std::vector<double> BusyFractions() const override { return inner_->BusyFractions(); }
  Time Now() const override { return inner_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override { inner_->OnAnswerWritten(answer); }
  DelayReport Delays() const override { return inner_->Delays(); }

  const std::vector<GraphSpec>& graphs() const { return graphs_; }

 private:
  struct Run;
  GraphEngine(InferenceEngine* inner, std::vector<std::string> model_names, std::vector<GraphSpec> graphs);
  // Submits step `i` of `run`; an error if the inner engine refused it.
  absl::Status StartStep(const std::shared_ptr<Run>& run, int i, std::vector<float> input);
  void OnStep(const std::shared_ptr<Run>& run, int i, InferenceOutcome outcome);
  Time DueOf(const Run& run, int step) const;
  // Counts a step's outcome, against the step's own deadline.
  void CountStep(const Run& run, int i, const InferenceOutcome& outcome);
  void Finish(const std::shared_ptr<Run>& run, InferenceOutcome outcome);

  InferenceEngine* const inner_;
  const std::vector<std::string> model_names_;  // the inner engine's
  const int inner_models_;
  const std::vector<GraphSpec> graphs_;
  std::vector<std::vector<double>> cumulative_;  // per graph, per step: its deadline's share of the objective
  std::vector<std::vector<int>> next_;           // per graph, per step: the step that reads its output; -1: none

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::vector<ModelCounters> counters_ ABSL_GUARDED_BY(mu_);  // per graph, with its steps
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;              // graph requests
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace tutti

#endif  // TUTTI_GRAPHS_GRAPH_ENGINE_H_
