// GraphEngine: serves graph models (Triton's ensembles; platform ensemble in
// the repository) over another InferenceEngine that serves their steps'
// models — InferenceCore in one process, RemoteEngine in distributed mode —
// so a graph runs wherever its steps do.
//
// Model ids: the inner engine's models keep theirs (0 … M−1); graph g is
// model M + g. A request for a graph runs each step once what it reads
// exists (the graph's input or an earlier step's output, moved to its last
// reader, not copied) and, for a routed step, once the step it is routed
// on has chosen a class: the step runs only when that class is one of its
// route's, else it is skipped, with every step that reads it. Each step is
// submitted to the inner engine with its own sub-deadline: the request's
// arrival plus its objective times the step's due share (DueShares of
// GraphSpec::shares; see MakeGraphShares for how they are chosen), steps
// no other step waits for at the end. The answer is the output of the
// output step that ran (with a merge: the mean or sum of the outputs of
// all that ran, once none is left to run) — or, on an early exit, of the
// step whose class says so — judged against the whole objective (late if
// it finished after arrival + objective).
//
// Every accepted graph request is answered exactly once: with its output;
// with the first error of a step — the inner engine's (its step dropped,
// failed, or refused) prefixed with the graph and the step; or, when the
// routes left no output step to run, with an error naming the classes
// chosen. Steps still running then finish unheard.
//
// Re-splitting (Nexus §6.2): every GraphOptions::resplit_every requests of
// a graph whose shares came from the latency split, the engine measures
// what fraction of their parents' requests its routed steps saw (γ) and the
// graph's rate; when a γ drifted from the one the split assumed, it splits
// again with the measured ones.
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
#include "tutti/serving/layered_engine.h"
#include "tutti/tracing/tracer.h"

namespace tutti {

struct GraphSpec {
  struct Step {
    ModelId model;       // the inner engine's
    int input_from = -1; // -1: the graph's input; else an earlier step (in `steps` order)
    // -1: the step always runs; else it runs only when the largest value of
    // that earlier step's output is at one of `route_values`.
    int route_from = -1;
    std::vector<int64_t> route_values;
    // The expected share of its parent's requests the step sees (γ); 1
    // unless routed.
    double gamma = 1;
    // ≥ 0: `model` serves several models' heads over one shared prefix
    // (a prefix group, Nexus §6.3): the step runs head `head`, whose index
    // goes before the input.
    int head = -1;
  };
  std::string name;
  Duration objective = 0;  // when a request gives none
  int64_t input_elements = 0, output_elements = 0;
  std::vector<Step> steps;     // only the steps an output needs, producers first
  std::vector<double> shares;  // per step: its share of the objective (along each path, at most 1 in all)
  // The steps that make the graph's output; empty: the last. Without a
  // merge at most one of them runs (routes exclude the others).
  std::vector<int> outputs;
  enum class Merge { kNone, kMean, kSum };
  Merge merge = Merge::kNone;  // else: the outputs of all that ran, element-wise
  int exit_from = -1;          // ≥ 0: answer with this step's output when its largest value is at
  std::vector<int64_t> exit_values;  // one of these
  bool even_split = false;     // shares from an even split: never re-split
  // What a step costs beyond its compute on the real clock (scheduling,
  // dispatch, the answer's way back): the split gives each step this much
  // more than its profile needs.
  Duration step_overhead = 0;
};

// The step a step waits for last (its input's or its route's), by step; -1:
// none. The latency split and due shares see the graph as this tree.
std::vector<int> StepParents(const GraphSpec& graph);

// The steps' shares of the objective: Nexus's latency split (planner/
// latency_split.h) over the steps' latency profiles in `spec` and the
// steps' γ, at `rate` graph requests/s; or, with graph.even_split, or when
// no split fits the objective, objective / (steps on the longest path) each.
// Shares the split leaves unused are given out in proportion: the longest
// path's shares sum to 1.
std::vector<double> MakeGraphShares(const GraphSpec& graph, const ClusterSpec& spec, double rate = 1);

struct GraphOptions {
  int64_t resplit_every = 1000;  // graph requests between checks of γ (0: never)
  double gamma_drift = 0.1;      // re-split when a measured γ differs by more than this
  // Records a span per step of the graph requests whose trace is recording,
  // as children of the request's span; the step's own request is traced
  // under it (null: none). Outlives the engine.
  Tracer* tracer = nullptr;
};

class GraphEngine final : public LayeredEngine {
 public:
  // `inner` serves `inner_spec`'s models and must outlive the engine.
  // Errors: a graph whose steps name unknown models, read a later step, or
  // whose shares do not match its steps.
  static absl::StatusOr<std::unique_ptr<GraphEngine>> Create(InferenceEngine* inner, const ClusterSpec& inner_spec,
                                                             std::vector<GraphSpec> graphs,
                                                             GraphOptions options = {});

  // InferenceEngine. Counters(): the inner engine's models, then the graphs'.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override;
  // A graph request of a sequence passes it to each of its steps (stateful
  // steps keep it; triton #5188).
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                                InferenceCallback done) override;
  // New requests, for graphs and the inner models alike, are refused; graphs
  // under way finish their steps. WaitIdle() waits for them, then for the
  // inner engine (which it then stops).
  void StopAccepting() override;
  void WaitIdle() override;
  int64_t in_flight() const override;  // the inner engine's, plus graphs between steps
  std::vector<ModelCounters> Counters() const override;

  // The graphs as they are split now (shares, and the γ they assume).
  std::vector<GraphSpec> graphs() const;
  // How often `graph` was re-split.
  int64_t resplits(int graph) const;

 private:
  struct Run;
  struct Start {
    int step;
    std::vector<float> input;
  };
  GraphEngine(InferenceEngine* inner, ClusterSpec inner_spec, std::vector<GraphSpec> graphs, GraphOptions options);
  // Under run.mu: the waiting steps that can now start (moved to running,
  // with their inputs) or never will (skipped), in step order.
  std::vector<Start> Advance(Run& run);
  void StartSteps(const std::shared_ptr<Run>& run, std::vector<Start> starts);
  // Submits a step; an error if the inner engine refused it.
  absl::Status StartStep(const std::shared_ptr<Run>& run, Start start);
  void OnStep(const std::shared_ptr<Run>& run, int i, InferenceOutcome outcome);
  // Counts a step's outcome, against the step's own deadline.
  void CountStep(const Run& run, int i, const InferenceOutcome& outcome);
  // Records step i's span, ended at `end` with `status`, when traced.
  void RecordStep(const Run& run, int i, const absl::Status& status, Time end) const;
  void Finish(const std::shared_ptr<Run>& run, InferenceOutcome outcome);
  // Under run.mu: the merge of the outputs of the output steps that ran.
  std::vector<float> Merged(Run& run) const;
  // Every options_.resplit_every requests of graph `g`: re-split on drift.
  void MaybeResplit(int g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ClusterSpec inner_spec_;
  const int inner_models_;
  const GraphOptions options_;
  std::vector<std::vector<int>> parents_;       // per graph: StepParents
  std::vector<std::vector<int>> outputs_;       // per graph: its output steps (the last, if none is named)
  std::vector<std::vector<uint8_t>> decides_;   // per graph, per step: a route or the exit reads its class

  const std::vector<GraphSpec> graphs_;         // as created; their shares and γ as below

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::vector<std::vector<double>> shares_ ABSL_GUARDED_BY(mu_);  // per graph, per step: now
  std::vector<std::vector<double>> gammas_ ABSL_GUARDED_BY(mu_);  // per graph, per step: what shares_ assume
  std::vector<int64_t> resplits_ ABSL_GUARDED_BY(mu_);
  // Per graph, per step: when it is due, as a share of the objective.
  std::vector<std::shared_ptr<const std::vector<double>>> due_ ABSL_GUARDED_BY(mu_);
  std::vector<ModelCounters> counters_ ABSL_GUARDED_BY(mu_);  // per graph, with its steps
  // Per graph, since its last re-split check: requests, the instant of the
  // first, and per step the requests that reached it.
  struct Window {
    int64_t requests = 0;
    Time since = 0;
    std::vector<int64_t> reached;
  };
  std::vector<Window> windows_ ABSL_GUARDED_BY(mu_);
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;              // graph requests
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace tutti

#endif  // TUTTI_GRAPHS_GRAPH_ENGINE_H_
