// StagedBatches: the StageHost both engines give their batch stages — the
// serving core (serving/inference_core.h) and a distributed frontend's
// RemoteEngine (distributed/remote_engine.h). It keeps each staged batch's
// request ids (the requests stay in the engine's RequestTable until they
// are answered), shows a batch to its model's stage when it is dispatched
// and when it comes back, answers what the stage answers, and forgets a
// batch once it came back and none of its items waits. What differs between
// the engines — how an internal request is submitted, how a timer runs
// under the engine's serialization — the engine gives as hooks.
//
// In flight: a staged request leaves flight when it is answered and its
// batch came back. TakeAnswers() says how many of the stages' answers did
// both; Executed() counts those the stage answered before the batch came
// back. The engine counts the items it answers itself.
//
// Thread-safety: none of its own. Every call, the hooks' too, is under the
// engine's mutex (the one guarding its table), as BatchStage's contract
// says.
#ifndef TUTTI_SERVING_STAGED_BATCHES_H_
#define TUTTI_SERVING_STAGED_BATCHES_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/serving/request_table.h"

namespace tutti {

template <typename Extra>
class StagedBatches final : public StageHost {
 public:
  using Table = RequestTable<Extra>;
  struct Hooks {
    // StageHost::SubmitInternal, as the engine does it.
    std::function<void(ModelId, std::vector<float>, Time, std::function<void(InferenceOutcome)>)> submit_internal;
    // Runs `fn` after `delay` under the engine's serialization, then
    // delivers what TakeAnswers() gives.
    std::function<void(Duration, std::function<void()>)> schedule_after;
  };
  struct Part {
    ModelId model;
    std::vector<uint64_t> ids;  // in batch order
    bool executed = false;
  };

  // `table`, `stages` (by model; null: none) and `clock` outlive the host.
  StagedBatches(Table* table, const std::vector<std::shared_ptr<BatchStage>>* stages, const Clock* clock,
                Hooks hooks)
      : table_(table), stages_(stages), clock_(clock), hooks_(std::move(hooks)) {}

  // Null: `model` has no stage.
  BatchStage* stage(ModelId model) const { return (*stages_)[model].get(); }

  // Shows a dispatched batch of `model` — its `ids`, waiting in the table,
  // and their `inputs` in that order — to the model's stage. Returns the
  // batch's id for the stage. REQUIRES: stage(model) != nullptr.
  uint64_t Dispatch(ModelId model, std::vector<uint64_t> ids, absl::Span<const float> inputs) {
    const uint64_t staged = next_++;
    Time earliest = kInfiniteFuture;
    for (uint64_t id : ids) earliest = std::min(earliest, table_->Find(id)->deadline);
    const int size = static_cast<int>(ids.size());
    parts_[staged] = Part{model, std::move(ids)};
    stage(model)->OnDispatch({staged, size, inputs, earliest}, *this);
    return staged;
  }

  // Null once forgotten.
  const Part* Find(uint64_t staged) const {
    auto it = parts_.find(staged);
    return it == parts_.end() ? nullptr : &it->second;
  }

  // The batch came back with `result` (its outputs when OK, checked for
  // size). Shows it to the stage and returns, per item, whether the engine
  // answers it with its original output (or the batch's error); the stage
  // answers the others. The engine then answers those and calls
  // ForgetIfFinished(). REQUIRES: Find(staged) and not yet executed.
  std::vector<bool> Executed(uint64_t staged, const ExecResult& result) {
    Part& part = parts_.at(staged);
    part.executed = true;
    for (uint64_t id : part.ids) done_ += !table_->contains(id);
    return stage(part.model)->OnExecuted(staged, static_cast<int>(part.ids.size()), result, *this);
  }

  // Forgets the batch once it came back and none of its items waits.
  void ForgetIfFinished(uint64_t staged) {
    auto it = parts_.find(staged);
    if (it == parts_.end() || !it->second.executed) return;
    for (uint64_t id : it->second.ids) {
      if (table_->contains(id)) return;
    }
    parts_.erase(it);
  }

  // Batches that never came back and none of whose items waits any more.
  std::vector<uint64_t> Abandoned() const {
    std::vector<uint64_t> out;
    for (const auto& [staged, part] : parts_) {
      if (!part.executed &&
          std::none_of(part.ids.begin(), part.ids.end(), [this](uint64_t id) { return table_->contains(id); })) {
        out.push_back(staged);
      }
    }
    return out;
  }

  // Moves the answers stages gave to `answers`, and adds to `*done` how many
  // staged requests left flight since the last call.
  void TakeAnswers(Answers* answers, int64_t* done = nullptr) {
    for (auto& a : answers_) answers->push_back(std::move(a));
    answers_.clear();
    if (done != nullptr) *done += done_;
    done_ = 0;
  }

  // StageHost.
  void SubmitInternal(ModelId model, std::vector<float> input, Time deadline,
                      std::function<void(InferenceOutcome)> done) override {
    hooks_.submit_internal(model, std::move(input), deadline, std::move(done));
  }
  void Answer(uint64_t staged, int position, InferenceOutcome out) override {
    auto it = parts_.find(staged);
    if (it == parts_.end()) return;  // came back and all answered: a second answer
    const Part& part = it->second;
    const uint64_t id = part.ids[position];
    const typename Table::Entry* e = table_->Find(id);
    if (e == nullptr) return;  // answered already (by the stage, or the engine's failure handling)
    CompleteStageAnswer(e->arrival, e->deadline, static_cast<int>(part.ids.size()), &out);
    table_->Answer(id, std::move(out), &answers_);
    done_ += part.executed;
    ForgetIfFinished(staged);
  }
  void ScheduleAfter(Duration delay, std::function<void()> fn) override {
    hooks_.schedule_after(delay, std::move(fn));
  }
  Time Now() const override { return clock_->Now(); }

 private:
  Table* const table_;
  const std::vector<std::shared_ptr<BatchStage>>* const stages_;
  const Clock* const clock_;
  const Hooks hooks_;
  absl::flat_hash_map<uint64_t, Part> parts_;  // unanswered or not yet back
  uint64_t next_ = 1;
  Answers answers_;     // given by stages, for TakeAnswers()
  int64_t done_ = 0;    // staged requests answered and back, for TakeAnswers()
};

}  // namespace tutti

#endif  // TUTTI_SERVING_STAGED_BATCHES_H_
