// RequestTable: what an engine keeps of the requests it has accepted, and
// the rules both engines — InferenceCore (serving/) and a distributed
// frontend's RemoteEngine (distributed/) — share:
//   - admission: the submission checks (CheckSubmission), then refusal once
//     StopAccepting() was called; an admitted request's deadline (DeadlineOf);
//   - outcomes: an answer counts for its model as the frontends report it —
//     success or late when OK (and reconstructed when ParM rebuilt it),
//     dropped for DeadlineExceeded, else error;
//   - idleness: a request is in flight from Add() until its owner Release()s
//     it — after its answer has run, and, in the serving core, after its
//     batch came back from its executor — and WaitIdle() returns once none is.
// A request stays in the table, with its callback, until it is answered
// (Answer); an engine may free its input once it is dispatched. Each entry
// carries the engine's own `Extra`.
//
// Answers are collected under the owner's lock and run outside it: an
// owner runs RunAnswers(), then Release()s them under its lock.
//
// Thread-safety: none of its own. The owner calls every method under its
// one mutex, the one WaitIdle() is given.
#ifndef TUTTI_SERVING_REQUEST_TABLE_H_
#define TUTTI_SERVING_REQUEST_TABLE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "tutti/core/status_macros.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

// Callbacks with their outcomes, decided under a lock and run outside it.
using Answers = std::vector<std::pair<InferenceCallback, InferenceOutcome>>;

// Runs `answers`' callbacks, in order; returns how many there were.
inline int64_t RunAnswers(Answers answers) {
  for (auto& [done, outcome] : answers) done(std::move(outcome));
  return static_cast<int64_t>(answers.size());
}

template <typename Extra>
class RequestTable {
 public:
  struct Entry {
    ModelId model;
    std::vector<float> input;
    InferenceCallback done;
    Time arrival;
    Time deadline;
    SequenceRef sequence{};  // of a stateful model's request; set by the owner
    std::shared_ptr<const CancelFlag> cancel;  // set by the owner; null: never withdrawn
    Extra extra{};

    // Whether it is to be withdrawn before it runs: its flag is set by
    // `now`, and it is of no sequence (whose state must advance). Owners
    // also keep the requests their model's batch stage plans with.
    bool Withdrawn(Time now) const { return cancel != nullptr && sequence.id == 0 && cancel->Cancelled(now); }
  };

  // `spec` and `shapes` (by model id) must outlive the table; the spec's
  // models are as they will be (the counters are sized by them).
  RequestTable(const ClusterSpec* spec, const std::vector<ModelShape>* shapes)
      : spec_(spec), shapes_(shapes), counters_(spec->models.size()) {}

  // The deadline of a request for `model` with `input_size` values due
  // `objective` after `now` (0: the model's SLO), or why it is refused:
  // CheckSubmission's errors, or Unavailable after StopAccepting().
  absl::StatusOr<Time> Admit(ModelId model, size_t input_size, Duration objective, Time now) const {
    TUTTI_RETURN_IF_ERROR(CheckSubmission(*spec_, *shapes_, model, input_size, objective));
    if (!accepting_) return absl::UnavailableError("the server is shutting down");
    return DeadlineOf(*spec_, model, now, objective);
  }
  void StopAccepting() { accepting_ = false; }

  // Adds a request (admitted, or an engine's internal one); it is in
  // flight from now on. Returns its id, unique in the table's life.
  uint64_t Add(ModelId model, std::vector<float> input, InferenceCallback done, Time arrival, Time deadline) {
    const uint64_t id = next_id_++;
    entries_.emplace(id, Entry{model, std::move(input), std::move(done), arrival, deadline});
    ++in_flight_;
    return id;
  }

  // Null once answered.
  Entry* Find(uint64_t id) {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
  }
  bool contains(uint64_t id) const { return entries_.contains(id); }
  // The ids of the entries `pred(id, entry)` holds for.
  template <typename Pred>
  std::vector<uint64_t> Select(Pred pred) const {
    std::vector<uint64_t> ids;
    for (const auto& [id, e] : entries_) {
      if (pred(id, e)) ids.push_back(id);
    }
    return ids;
  }

  // REQUIRES: contains(id). Counts `out`, adds the entry's callback with it
  // to `answers` and removes the entry.
  void Answer(uint64_t id, InferenceOutcome out, Answers* answers) {
    auto it = entries_.find(id);
    ModelCounters& c = counters_[it->second.model];
    CountOutcome(out.status, out.late, &c);
    if (out.status.ok()) c.reconstructed += out.reconstructed;
    answers->push_back({std::move(it->second.done), std::move(out)});
    entries_.erase(it);
  }
  // An error answer to `e`, decided at `now`.
  static InferenceOutcome ErrorOutcome(const Entry& e, absl::Status status, Time now) {
    InferenceOutcome out;
    out.status = std::move(status);
    out.arrival = e.arrival;
    out.deadline = e.deadline;
    out.finished = now;
    return out;
  }

  // `n` requests leave flight; WaitIdle() returns when none is left.
  void Release(int64_t n) {
    in_flight_ -= n;
    if (in_flight_ == 0) idle_.notify_all();
  }
  // REQUIRES: `lock` holds the owner's mutex.
  void WaitIdle(std::unique_lock<std::mutex>& lock) {
    idle_.wait(lock, [this] { return in_flight_ == 0; });
  }
  int64_t in_flight() const { return in_flight_; }

  // The owner counts batches (it knows what a batch is to it).
  ModelCounters& counters(ModelId model) { return counters_[model]; }
  // Per model, with its batch stage's events (`stages` by model; null: none).
  std::vector<ModelCounters> Counters(const std::vector<std::shared_ptr<BatchStage>>& stages) const {
    std::vector<ModelCounters> out = counters_;
    for (size_t m = 0; m < out.size() && m < stages.size(); ++m) {
      if (stages[m]) out[m].stage_events = stages[m]->EventCounts();
    }
    return out;
  }

 private:
  const ClusterSpec* const spec_;
  const std::vector<ModelShape>* const shapes_;
  absl::flat_hash_map<uint64_t, Entry> entries_;
  std::vector<ModelCounters> counters_;
  std::condition_variable idle_;
  uint64_t next_id_ = 1;
  int64_t in_flight_ = 0;
  bool accepting_ = true;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_REQUEST_TABLE_H_
