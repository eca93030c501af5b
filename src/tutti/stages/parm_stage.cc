#include "tutti/stages/parm_stage.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {

ParmStage::ParmStage(const ParmCoding& coding, int64_t output_elements)
    : parity_model_(coding.parity_model),
      reconstruct_delay_(coding.reconstruct_delay),
      groups_(coding.codec, output_elements) {}

void ParmStage::OnDispatch(const Dispatched& batch, StageHost& host) {
  ParityGroups::Dispatched d = groups_.AddBatch(batch.batch, batch.size, batch.inputs);
  open_group_deadline_ = std::min(open_group_deadline_, batch.earliest_deadline);
  for (size_t p = 0; p < d.parity_queries.size(); ++p) {
    host.SubmitInternal(parity_model_, std::move(d.parity_queries[p]), open_group_deadline_,
                        [this, h = &host, group = d.group, position = static_cast<int>(p)](InferenceOutcome o) {
                          OnParityOutcome(group, position, o, *h);
                        });
  }
  if (!d.parity_queries.empty()) open_group_deadline_ = kInfiniteFuture;
}

std::vector<bool> ParmStage::OnExecuted(uint64_t batch, int size, const ExecResult& result, StageHost& host) {
  ParityGroups::Events events;
  std::vector<bool> deliver;
  if (result.status.ok()) {
    deliver = groups_.OnBatchDone(batch, result.output, &events);
  } else {
    // Its items wait for reconstructions, or the events answer them with the error.
    failed_[batch] = {result.status, size};
    groups_.OnBatchFailed(batch, &events);
    deliver.assign(size, false);
  }
  Handle(std::move(events), result.emulated, host);
  return deliver;
}

void ParmStage::OnParityOutcome(ParityGroups::GroupId group, int position, const InferenceOutcome& outcome,
                                StageHost& host) {
  ParityGroups::Events events;
  if (outcome.status.ok()) {
    groups_.OnParityDone(group, position, outcome.output, &events);
  } else {
    groups_.OnParityLost(group, position, &events);
  }
  Handle(std::move(events), outcome.emulated, host);
}

void ParmStage::Handle(ParityGroups::Events events, bool emulated, StageHost& host) {
  for (ParityGroups::Reconstruction& r : events.reconstructions) {
    // A failed batch has no original coming: rebuild its items at once.
    if (reconstruct_delay_ <= 0 || failed_.contains(r.batch)) {
      AnswerReconstruction(r, emulated, host);
      continue;
    }
    host.ScheduleAfter(reconstruct_delay_, [this, h = &host, r = std::move(r), emulated] {
      AnswerReconstruction(r, emulated, *h);
    });
  }
  for (const ParityGroups::Position& f : events.failures) {
    InferenceOutcome out;
    out.status = failed_.at(f.batch).error;
    out.finished = host.Now();
    host.Answer(f.batch, f.position, std::move(out));
    AnsweredFailed(f.batch);
  }
}

void ParmStage::AnswerReconstruction(const ParityGroups::Reconstruction& r, bool emulated, StageHost& host) {
  if (!groups_.Claim(r.batch, r.position)) return;  // the original came first
  InferenceOutcome out;
  out.output = r.output;
  out.reconstructed = true;
  out.emulated = emulated;
  out.started = out.finished = host.Now();
  host.Answer(r.batch, r.position, std::move(out));
  AnsweredFailed(r.batch);
}

void ParmStage::AnsweredFailed(uint64_t batch) {
  auto it = failed_.find(batch);
  if (it != failed_.end() && --it->second.unanswered == 0) failed_.erase(it);
}

std::vector<std::pair<std::string, int64_t>> ParmStage::EventCounts() const {
  const ParityGroups::Stats& s = groups_.stats();
  return {{"group", s.groups},
          {"discarded_original", s.discarded_originals},
          {"dropped_parity", s.dropped_parities},
          {"lost_parity", s.lost_parities}};
}

absl::StatusOr<std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>>> MakeParmStages(
    const ClusterSpec& spec, const std::vector<ModelShape>& shapes, const std::vector<ParmCoding>& codings) {
  const int models = static_cast<int>(spec.models.size());
  if (static_cast<int>(shapes.size()) != models) {
    return absl::InvalidArgumentError(absl::StrCat(shapes.size(), " model shapes for ", models, " models"));
  }
  std::vector<bool> coded(models, false), parity(models, false);
  std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>> stages;
  for (const ParmCoding& c : codings) {
    if (c.model < 0 || c.model >= models || c.parity_model < 0 || c.parity_model >= models ||
        c.model == c.parity_model) {
      return absl::InvalidArgumentError(absl::StrCat("coding: bad model ids ", c.model, " and ", c.parity_model));
    }
    const std::string& name = spec.models[c.model].name;
    if (coded[c.model] || parity[c.model] || coded[c.parity_model]) {
      return absl::InvalidArgumentError(absl::StrCat("coding: model '", name, "' is coded twice or is a parity model"));
    }
    coded[c.model] = true;
    parity[c.parity_model] = true;
    if (c.codec.item_elements() != shapes[c.model].input_elements ||
        shapes[c.parity_model].input_elements != shapes[c.model].input_elements ||
        shapes[c.parity_model].output_elements != shapes[c.model].output_elements) {
      return absl::InvalidArgumentError(absl::StrCat("coding: parity model '", spec.models[c.parity_model].name,
                                                     "' and its codec must match the sizes of '", name, "'"));
    }
    stages.emplace_back(c.model, std::make_shared<ParmStage>(c, shapes[c.model].output_elements));
  }
  return stages;
}

}  // namespace tutti
