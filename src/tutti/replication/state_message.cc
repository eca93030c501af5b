#include "tutti/replication/state_message.h"

#include "tutti/core/fnv_hash.h"

namespace tutti::replication {

// A digest of a state's bits: FNV-1a's step over 32-bit words, then a final
// mix (the audit compares digests; they need not be cryptographic).
uint64_t Digest(const float* p, int64_t n) {
  uint64_t h = kFnvOffsetBasis;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, p + i, sizeof w);
    h = (h ^ w) * kFnvPrime;
  }
  return h ^ (h >> 29);
}

// `value`: the n floats of s's value (s->value itself may be null).
void PutState(Writer& w, const Key& k, const State* s, const float* value, int64_t n) {
  w.Put(k.first);
  w.Put(k.second);
  w.Put<uint8_t>(s == nullptr);  // erased
  if (s == nullptr) return;
  w.Put(s->version);
  w.Put(s->digest);
  w.Put(s->parent);
  w.Put(s->touched);
  w.PutFloats(value, n);
}

// PutState with s's own value (s null: erased).
void PutState(Writer& w, const Key& k, const State* s) {
  const std::vector<float>* v = s != nullptr ? s->value.get() : nullptr;
  PutState(w, k, s, v != nullptr ? v->data() : nullptr,
           v != nullptr ? static_cast<int64_t>(v->size()) : 0);
}

// PutState's bytes.
size_t StateBytes(const State* s) {
  constexpr size_t kHead = sizeof(int) + sizeof(uint64_t) + 1,
                   kMeta = 4 * sizeof(uint64_t) + sizeof(int64_t);
  return kHead + (s == nullptr ? 0 : kMeta + (s->value ? s->value->size() * sizeof(float) : 0));
}

// An Outgoing's bytes, as BackupState::Apply reads them, into `out` (its
// capacity kept).
void Encode(const Outgoing& m, std::string* out) {
  Writer w(std::move(*out));
  w.Reserve(m.size);
  if (m.log_of > 0) {
    const Logged& l = m.log;
    w.Put<uint8_t>(kLog);
    w.Put(m.log_of);
    w.Put(l.model);
    w.Put(l.size);
    for (int i = 0; i < l.size; ++i) {
      w.Put(l.sequences[i].id);
      w.Put<uint8_t>(l.sequences[i].start);
      w.Put<uint8_t>(l.sequences[i].end);
      w.Put(l.tags[i]);
      w.Put(l.reads[i]);
    }
    w.PutFloats(l.input.data(), static_cast<int64_t>(l.input.size()));
  } else if (m.states_of > 0) {
    w.Put<uint8_t>(kStates);
    w.Put(m.states_of);
    w.Put<int64_t>(static_cast<int64_t>(m.states.size()));
    const float* copied = m.values.data();
    for (size_t i = 0; i < m.states.size(); ++i) {
      const auto& [key, st] = m.states[i];
      if (st && st->value) {
        PutState(w, key, &*st);  // shared
      } else {
        PutState(w, key, st ? &*st : nullptr, copied, m.counts[i]);
        copied += m.counts[i];
      }
    }
    w.PutBytes(m.bytes);
  } else {
    w.PutBytes(m.bytes);
  }
  *out = w.Take();
}

}  // namespace tutti::replication
