#include "tutti/repository/tensor_record.h"

#include <algorithm>
#include <cstring>

namespace tutti {
namespace {

int64_t Words(int64_t bytes) { return (bytes + 3) / 4; }

}  // namespace

bool IsPlainFp32(const std::vector<TensorSpec>& tensors) {
  return tensors.size() == 1 && tensors[0].datatype == DataType::kFp32 &&
         std::find(tensors[0].shape.begin(), tensors[0].shape.end(), -1) == tensors[0].shape.end();
}

int64_t ItemBytes(const TensorSpec& spec) { return spec.ElementCount() * spec.ElementSize(); }

int64_t RecordWords(const std::vector<TensorSpec>& tensors) {
  int64_t words = 0;
  for (const TensorSpec& t : tensors) words += Words(ItemBytes(t));
  return words;
}

void PackRecords(const std::vector<TensorSpec>& specs, const std::vector<std::string>& tensors, int batch,
                 std::vector<float>* words) {
  const int64_t record = RecordWords(specs);
  const size_t at = words->size();
  words->resize(at + batch * record, 0.0f);  // padding stays zero
  char* out = reinterpret_cast<char*>(words->data() + at);
  for (int i = 0; i < batch; ++i) {
    for (size_t t = 0; t < specs.size(); ++t) {
      const int64_t n = ItemBytes(specs[t]);
      std::memcpy(out, tensors[t].data() + i * n, n);
      out += Words(n) * 4;
    }
  }
}

std::vector<std::string> UnpackRecords(const std::vector<TensorSpec>& specs, absl::Span<const float> words,
                                       int batch) {
  std::vector<std::string> tensors(specs.size());
  for (size_t t = 0; t < specs.size(); ++t) tensors[t].resize(batch * ItemBytes(specs[t]));
  const char* in = reinterpret_cast<const char*>(words.data());
  for (int i = 0; i < batch; ++i) {
    for (size_t t = 0; t < specs.size(); ++t) {
      const int64_t n = ItemBytes(specs[t]);
      std::memcpy(tensors[t].data() + i * n, in, n);
      in += Words(n) * 4;
    }
  }
  return tensors;
}

void AppendBytesSlot(absl::string_view element, int64_t max_bytes, std::string* out) {
  const uint32_t length = static_cast<uint32_t>(element.size());
  out->append(reinterpret_cast<const char*>(&length), 4);
  out->append(element.data(), element.size());
  out->append(max_bytes - element.size(), '\0');
}

absl::string_view BytesSlotElement(const char* slot, int64_t max_bytes) {
  uint32_t length;
  std::memcpy(&length, slot, 4);
  return absl::string_view(slot + 4, std::min<int64_t>(length, max_bytes));
}

}  // namespace tutti
