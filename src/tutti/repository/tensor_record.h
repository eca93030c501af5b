// How the serving core carries an item's tensors: one record of 32-bit
// words per item, so that admission, batching, the distributed hand-off and
// the answers move every model's items alike, whatever its tensors.
//
// A model of one FP32 tensor (the common case, and ParM's and the stateful
// models') has a record that is exactly its values. Any other model's
// record is its tensors in config order, each as its elements' raw
// little-endian bytes zero-padded to a whole word; only the codecs (which
// pack what clients send) and the executors (which unpack it into their
// tensors) read it. A BYTES element takes a slot of fixed size
// (TensorSpec::ElementSize): its length, then its bytes, zero-padded.
#ifndef TUTTI_REPOSITORY_TENSOR_RECORD_H_
#define TUTTI_REPOSITORY_TENSOR_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "tutti/repository/model_config.h"

namespace tutti {

// One FP32 tensor of a fixed shape: the record is its values.
bool IsPlainFp32(const std::vector<TensorSpec>& tensors);

// Bytes of one item of `spec`. The functions below take
// tensors of fixed shapes (a model of variable dimensions: TensorsAt its
// bucket).
int64_t ItemBytes(const TensorSpec& spec);

// Words in one item's record of `tensors`.
int64_t RecordWords(const std::vector<TensorSpec>& tensors);

// Appends `batch` records to `words`. `tensors[t]` holds the batch's
// elements of specs[t], [batch, dims…] row-major, little-endian.
// REQUIRES: tensors.size() == specs.size() and tensors[t].size() ==
// batch × ItemBytes(specs[t]).
void PackRecords(const std::vector<TensorSpec>& specs, const std::vector<std::string>& tensors, int batch,
                 std::vector<float>* words);

// The inverse: per spec, the batch's elements. REQUIRES: words.size() ==
// batch × RecordWords(specs).
std::vector<std::string> UnpackRecords(const std::vector<TensorSpec>& specs, absl::Span<const float> words,
                                       int batch);

// A BYTES element's slot (TensorSpec::ElementSize): appended to `out`, and
// its element read back (a length past max_bytes is cut to it).
// REQUIRES: element.size() <= max_bytes.
void AppendBytesSlot(absl::string_view element, int64_t max_bytes, std::string* out);
absl::string_view BytesSlotElement(const char* slot, int64_t max_bytes);

}  // namespace tutti

#endif  // TUTTI_REPOSITORY_TENSOR_RECORD_H_
