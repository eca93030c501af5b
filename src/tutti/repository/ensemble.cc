#include "tutti/repository/ensemble.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/repository/model_repository.h"

namespace tutti {
namespace {

std::string Step(int i) { return absl::StrCat("ensemble_scheduling.step[", i, "]"); }

std::string Describe(const TensorSpec& t) {
  return absl::StrCat(DataTypeName(t.datatype), " [", absl::StrJoin(t.shape, ", "), "]");
}

const TensorSpec* FindTensor(const std::vector<TensorSpec>& tensors, const std::string& name) {
  for (const TensorSpec& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string Names(const std::vector<TensorSpec>& tensors) {
  return absl::StrJoin(tensors, ", ", [](std::string* out, const TensorSpec& t) { absl::StrAppend(out, t.name); });
}

absl::Status Invalid(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

}  // namespace

absl::StatusOr<EnsemblePlan> PlanEnsemble(const ModelConfig& graph, const std::vector<ModelVersion>& versions) {
  const int n = static_cast<int>(graph.steps.size());
  EnsemblePlan plan;
  for (int i = 0; i < n; ++i) {
    const EnsembleStep& s = graph.steps[i];
    const ModelVersion* found = nullptr;
    for (const ModelVersion& v : versions) {
      if (v.config.name != s.model_name) continue;
      if (s.model_version == -1 ? (found == nullptr || v.version > found->version) : v.version == s.model_version) {
        found = &v;
      }
    }
    if (found == nullptr) {
      const bool any = std::any_of(versions.begin(), versions.end(),
                                   [&](const ModelVersion& v) { return v.config.name == s.model_name; });
      return Invalid(Step(i), any ? absl::StrCat("model '", s.model_name, "' has no version ", s.model_version)
                                  : absl::StrCat("unknown model '", s.model_name, "'"));
    }
    if (found->config.platform == Platform::kEnsemble) {
      return Invalid(Step(i), absl::StrCat("'", s.model_name, "' is a graph itself; graphs of graphs are not supported"));
    }
    plan.models.push_back(found);
  }
  // Each tensor's one producer: a graph input (step -1) or a step's output.
  struct Producer {
    const TensorSpec* spec;
    int step;
  };
  absl::flat_hash_map<std::string, Producer> producers;
  for (const TensorSpec& t : graph.inputs) producers[t.name] = {&t, -1};
  auto who = [](int step) { return step < 0 ? std::string("the graph's input") : Step(step); };
  // Two routed steps may make one tensor when at most one of them can run.
  auto exclusive = [&](int a, int b) {
    const std::optional<EnsembleRoute>&ra = graph.steps[a].route, &rb = graph.steps[b].route;
    if (!ra || !rb || ra->tensor != rb->tensor) return false;
    return std::none_of(ra->argmax_in.begin(), ra->argmax_in.end(), [&](int64_t v) {
      return std::find(rb->argmax_in.begin(), rb->argmax_in.end(), v) != rb->argmax_in.end();
    });
  };
  absl::flat_hash_map<std::string, std::vector<int>> alternatives;  // tensor → the steps that make it
  for (int i = 0; i < n; ++i) {
    const ModelConfig& m = plan.models[i]->config;
    for (const auto& [output, tensor] : graph.steps[i].output_map) {
      const TensorSpec* spec = FindTensor(m.outputs, output);
      if (spec == nullptr) {
        return Invalid(Step(i), absl::StrCat("model '", m.name, "' has no output '", output, "' (it has: ",
                                             Names(m.outputs), ")"));
      }
      auto [it, added] = producers.try_emplace(tensor, Producer{spec, i});
      if (!added) {
        const Producer& first = it->second;
        if (first.step < 0) {
          return Invalid(Step(i), absl::StrCat("tensor '", tensor, "' is produced twice: by ", who(first.step),
                                               " and by this step"));
        }
        const bool merged = !graph.merge.empty() && graph.outputs.size() == 1 && tensor == graph.outputs[0].name;
        for (int other : alternatives[tensor]) {
          if (!merged && !exclusive(other, i)) {
            return Invalid(Step(i), absl::StrCat("tensor '", tensor, "' is produced twice: by ", who(other),
                                                 " and by this step, and both can run (only steps routed on one "
                                                 "tensor, with no class in common, may make the same tensor)"));
          }
        }
        if (first.spec->datatype != spec->datatype || first.spec->shape != spec->shape) {
          return Invalid(Step(i), absl::StrCat("tensor '", tensor, "' is ", Describe(*spec), " here but ",
                                               Describe(*first.spec), " from ", who(first.step)));
        }
      }
      alternatives[tensor].push_back(i);
    }
  }
  // A route reads a tensor some step makes (a graph input is known before
  // any step runs: route on it by giving it to a step instead).
  auto check_route = [&](const EnsembleRoute& route, const std::string& where) -> absl::StatusOr<int> {
    auto it = producers.find(route.tensor);
    if (it == producers.end() || it->second.step < 0) {
      return Invalid(where, absl::StrCat("routes on tensor '", route.tensor, "', which no step makes"));
    }
    const int64_t classes = it->second.spec->ElementCount();
    for (int64_t v : route.argmax_in) {
      if (v >= classes) {
        return Invalid(where, absl::StrCat("class ", v, " is out of range: tensor '", route.tensor, "' has ",
                                           classes, " values"));
      }
    }
    return it->second.step;
  };
  // What each step reads, checked against its producer.
  std::vector<std::vector<int>> needs(n);
  for (int i = 0; i < n; ++i) {
    const ModelConfig& m = plan.models[i]->config;
    const EnsembleStep& s = graph.steps[i];
    for (const TensorSpec& in : m.inputs) {
      if (!s.input_map.contains(in.name)) {
        return Invalid(Step(i), absl::StrCat("input '", in.name, "' of model '", m.name, "' is not mapped"));
      }
    }
    for (const auto& [input, tensor] : s.input_map) {
      const TensorSpec* spec = FindTensor(m.inputs, input);
      if (spec == nullptr) {
        return Invalid(Step(i), absl::StrCat("model '", m.name, "' has no input '", input, "' (it has: ",
                                             Names(m.inputs), ")"));
      }
      auto it = producers.find(tensor);
      if (it == producers.end()) {
        return Invalid(Step(i), absl::StrCat("tensor '", tensor, "' comes from no step and is no input of the graph"));
      }
      const TensorSpec& made = *it->second.spec;
      if (made.datatype != spec->datatype || made.shape != spec->shape) {
        return Invalid(Step(i), absl::StrCat("tensor '", tensor, "' is ", Describe(made), " (from ",
                                             who(it->second.step), ") but input '", input, "' of model '", m.name,
                                             "' takes ", Describe(*spec)));
      }
      for (int producer : alternatives[tensor]) needs[i].push_back(producer);
    }
    if (s.route) {
      TUTTI_ASSIGN_OR_RETURN(int producer, check_route(*s.route, Step(i) + ".route"));
      needs[i].push_back(producer);
    }
  }
  if (graph.early_exit) {
    TUTTI_ASSIGN_OR_RETURN(int producer, check_route(*graph.early_exit, "ensemble_scheduling.early_exit"));
    const TensorSpec& made = *producers.at(graph.early_exit->tensor).spec;
    if (graph.outputs.size() != 1 || made.datatype != graph.outputs[0].datatype ||
        made.shape != graph.outputs[0].shape) {
      return Invalid("ensemble_scheduling.early_exit",
                     absl::StrCat("tensor '", graph.early_exit->tensor, "' (", Describe(made), ", from ",
                                  who(producer), ") cannot be the graph's one output"));
    }
  }
  for (const TensorSpec& out : graph.outputs) {
    auto it = producers.find(out.name);
    if (it == producers.end() || it->second.step < 0) {
      return Invalid(absl::StrCat("outputs"), absl::StrCat("graph output '", out.name, "' comes from no step"));
    }
    if (it->second.spec->datatype != out.datatype || it->second.spec->shape != out.shape) {
      return Invalid("outputs", absl::StrCat("graph output '", out.name, "' is declared ", Describe(out), " but ",
                                             who(it->second.step), " makes it ", Describe(*it->second.spec)));
    }
  }
  // Producers first (Kahn's order); steps left over wait on each other.
  std::vector<int> waiting(n);
  std::vector<std::vector<int>> feeds(n);
  for (int i = 0; i < n; ++i) {
    waiting[i] = static_cast<int>(needs[i].size());
    for (int j : needs[i]) feeds[j].push_back(i);
  }
  for (int i = 0; i < n; ++i) {
    if (waiting[i] == 0) plan.order.push_back(i);
  }
  for (size_t k = 0; k < plan.order.size(); ++k) {
    for (int i : feeds[plan.order[k]]) {
      if (--waiting[i] == 0) plan.order.push_back(i);
    }
  }
  if (static_cast<int>(plan.order.size()) != n) {
    std::vector<std::string> cycle;
    for (int i = 0; i < n; ++i) {
      if (waiting[i] > 0) cycle.push_back(absl::StrCat(i, " (", graph.steps[i].model_name, ")"));
    }
    return Invalid("ensemble_scheduling", absl::StrCat("steps ", absl::StrJoin(cycle, ", "),
                                                       " form a cycle: each waits for a tensor another makes"));
  }
  return plan;
}

}  // namespace tutti
