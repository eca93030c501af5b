#include "tutti/replication/backup_state.h"

#include <utility>

namespace tutti::replication {

void BackupState::Keep(uint64_t tag, Kept kept) {
  if (tag == 0) return;
  if (answers.insert_or_assign(tag, std::move(kept)).second) answer_order.push_back(tag);
  while (answer_order.size() > kKeptAnswers) {
    answers.erase(answer_order.front());
    answer_order.pop_front();
  }
}

void BackupState::Apply(const std::string& bytes) {
  Reader r(bytes);
  const auto kind = r.Get<uint8_t>();
  const auto batch = r.Get<uint64_t>();
  if (kind == kLog) {
    Logged l;
    l.model = r.Get<int>();
    l.size = r.Get<int>();
    for (int i = 0; i < l.size; ++i) {
      SequenceRef s;
      s.id = r.Get<uint64_t>();
      s.start = r.Get<uint8_t>();
      s.end = r.Get<uint8_t>();
      l.sequences.push_back(s);
      l.tags.push_back(r.Get<uint64_t>());
      l.reads.push_back(r.Get<uint64_t>());
      const Key key{l.model, s.id};
      if (s.end) {
        reads.erase(key);
      } else {
        reads[key] = l.reads.back();
      }
    }
    r.GetFloats(&l.input);
    log.emplace(batch, std::move(l));
    return;
  }
  if (kind == kCheckpoint) states.clear();
  const auto count = r.Get<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    Key k;
    k.first = r.Get<int>();
    k.second = r.Get<uint64_t>();
    if (r.Get<uint8_t>()) {
      states.erase(k);
      continue;
    }
    State& s = states[k];
    s.version = r.Get<uint64_t>();
    s.digest = r.Get<uint64_t>();
    s.parent = r.Get<uint64_t>();
    s.touched = r.Get<Time>();
    auto value = std::make_shared<std::vector<float>>();
    r.GetFloats(value.get());
    s.value = std::move(value);
  }
  if (kind == kStates) {  // the batch's answers, by tag
    const auto answered = r.Get<int64_t>();
    for (int64_t i = 0; i < answered; ++i) {
      const auto tag = r.Get<uint64_t>();
      Kept kept;
      r.GetFloats(&kept.output);
      Keep(tag, std::move(kept));
    }
  }
  applied = batch;
  log.erase(log.begin(), log.upper_bound(batch));
}

}  // namespace tutti::replication
