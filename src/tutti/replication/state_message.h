// The messages from a slot's primary to its backup (replicated_executor.h):
// the states they carry, their bytes — what would cross the network — and
// the message as the slot posts it, before the link makes its bytes.
// Internal to replication/.
#ifndef TUTTI_REPLICATION_STATE_MESSAGE_H_
#define TUTTI_REPLICATION_STATE_MESSAGE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/core/time.h"
#include "tutti/core/ids.h"

namespace tutti::replication {

using Key = std::pair<int, uint64_t>;  // the model's position, the sequence id

struct State {
  // A commit makes a new one; never changed in place (a states' message may
  // share it: Outgoing).
  std::shared_ptr<const std::vector<float>> value;
  uint64_t version = 0;  // requests of the sequence it has seen
  uint64_t digest = 0;   // of its bits
  uint64_t parent = 0;   // the digest of the state it was made from
  Time touched = 0;
  uint64_t shipped = 0;  // the primary's: the message that carries it to the backup
};
using StateMap = absl::flat_hash_map<Key, State>;

// A digest of a state's bits: FNV-1a's step over 32-bit words, then a final
// mix (the audit compares digests; they need not be cryptographic).
uint64_t Digest(const float* p, int64_t n);

// The bytes of messages to the backup: what would cross the network.
class Writer {
 public:
  // Writes into `into`'s buffer, emptied (its capacity kept).
  explicit Writer(std::string into = {}) : out_(std::move(into)) { out_.clear(); }
  template <typename T>
  void Put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutFloats(const float* p, int64_t n) {
    Put(n);
    out_.append(reinterpret_cast<const char*>(p), n * sizeof(float));
  }
  void PutBytes(const std::string& bytes) { out_ += bytes; }
  void Reserve(size_t bytes) { out_.reserve(bytes); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  void GetFloats(std::vector<float>* v) {
    const int64_t n = Get<int64_t>();
    v->resize(n);
    std::memcpy(v->data(), in_.data() + at_, n * sizeof(float));
    at_ += n * sizeof(float);
  }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

// A message's first byte.
enum MessageKind : uint8_t { kLog = 1, kStates = 2, kCheckpoint = 3 };

// `value`: the n floats of s's value (s->value itself may be null).
void PutState(Writer& w, const Key& k, const State* s, const float* value, int64_t n);

// PutState with s's own value (s null: erased).
void PutState(Writer& w, const Key& k, const State* s);

// PutState's bytes.
size_t StateBytes(const State* s);

// A batch's inputs as served (the backup's log), and what each item read.
struct Logged {
  int model = 0;
  int size = 0;
  std::vector<SequenceRef> sequences;
  std::vector<uint64_t> tags;   // per item; 0: none
  std::vector<uint64_t> reads;  // per item: the digest of the state it read
  std::vector<float> input;
};

// A message to the backup as the slot posts it: a checkpoint's `bytes`; or
// batch `states_of`'s kStates message — the states it wrote (none: erased),
// then `bytes` (its answers: PutAnswers); or batch `log_of`'s kLog message,
// `log`. The link makes its bytes (Encode), off the slot's lock and off
// every answer's path. Its buffers are used again, message after message
// (Clear keeps their capacity up to kKept floats), so that making one
// allocates nothing. A state of up to kCopied floats is copied into
// `values`; a larger one shares its committed value (which no later commit
// changes): shared, a small value's count and memory go to the link's
// thread, which frees it, at more cost than the copy; copied, a large one
// costs more than sharing it (bench/replication_benchmark.cc).
struct Outgoing {
  static constexpr int64_t kCopied = 1024;
  static constexpr size_t kKept = 16384;
  uint64_t seq = 0;
  std::string bytes;
  uint64_t states_of = 0;
  std::vector<std::pair<Key, std::optional<State>>> states;  // a copied one's `value` null
  std::vector<float> values;    // the copied states' values, one after another
  std::vector<int64_t> counts;  // per state: its floats in `values` (0: shared, or erased)
  uint64_t log_of = 0;
  Logged log;
  size_t size = 0;  // encoded

  void Clear() {
    seq = states_of = log_of = 0;
    size = 0;
    bytes.clear();
    states.clear();
    Empty(values);
    counts.clear();
    log.sequences.clear();
    log.tags.clear();
    log.reads.clear();
    Empty(log.input);
  }

 private:
  static void Empty(std::vector<float>& v) {
    if (v.capacity() > kKept) {
      std::vector<float>().swap(v);  // a ring of messages keeps no large buffers
    } else {
      v.clear();
    }
  }
};

// An Outgoing's bytes, as BackupState::Apply reads them, into `out` (its
// capacity kept).
void Encode(const Outgoing& m, std::string* out);

}  // namespace tutti::replication

#endif  // TUTTI_REPLICATION_STATE_MESSAGE_H_
