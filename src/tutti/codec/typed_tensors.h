// The wire side of a model whose tensors are not one FP32 input and output
// (repository/tensor_record.h): the checks of each input, conversion of
// each element with its datatype's range, and the outputs as typed values.
// Both protocols' codecs use it, so that JSON, binary data and gRPC accept
// and refuse the same requests with the same messages, each naming the
// tensor and the rule it broke.
#ifndef TUTTI_CODEC_TYPED_TENSORS_H_
#define TUTTI_CODEC_TYPED_TENSORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/codec/infer_request.h"
#include "tutti/repository/model_config.h"

namespace tutti {

// One element as a protocol carries it: a JSON boolean, number or string,
// or an entry of a gRPC typed contents field.
struct WireScalar {
  enum Kind { kBool, kInt, kUint, kDouble, kBytes } kind = kDouble;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  absl::string_view s;  // kBytes
};

// A typed model's request, input by input. A model of variable (-1)
// dimensions takes any length there, one per request, at most its largest
// shape bucket; Finish pads the inputs with zeros to the smallest bucket
// that holds them. An optional input left out is zeros. Thread-compatible.
class TypedInputs {
 public:
  explicit TypedInputs(const ModelConfig& config);

  // Checks an input's name (one of the model's, not given before), datatype
  // and shape ([N, dims…], the same N for every input, at most
  // max_batch_size). Returns its index among the config's inputs.
  absl::StatusOr<int> Add(absl::string_view name, absl::string_view datatype, const std::vector<int64_t>& shape);
  // Its elements, one at a time: InvalidArgument for one its datatype cannot
  // hold (a fraction for an integer, a value out of range, a number for BOOL,
  // a string longer than a BYTES input's max_element_bytes).
  absl::Status Append(int input, const WireScalar& value);
  // Or all at once: raw little-endian bytes, exactly its shape's (BYTES:
  // each element as a 4-byte little-endian length, then its bytes).
  absl::Status SetRaw(int input, absl::string_view bytes);
  // Every input present with all its elements: sets out->batch and packs
  // them into out->data (a model of variable dimensions: also out->bucket
  // and out->answer's length and bucket size).
  absl::Status Finish(InferRequest* out);

 private:
  int64_t Bytes(int input) const;  // of its shape as given

  const ModelConfig& config_;
  int batch_ = 0;
  int64_t length_ = 0;  // of the variable dimensions; 0: none yet
  std::vector<std::vector<int64_t>> shapes_;  // per config input, as given (empty: not yet)
  std::vector<std::string> data_;  // per config input, its elements so far
};

// One output of an answer: its config entry, its elements as binary data
// and raw contents carry them (SetRaw's form), and its shape, batch
// dimension first.
struct OutputTensor {
  const TensorSpec* spec = nullptr;
  std::string bytes;
  std::vector<int64_t> shape;
};

// The answers of `items` items of a typed model laid out as `answer` says:
// per output it asks for (all by default), in config order, the batch's
// elements (variable dimensions cut back to the request's length).
std::vector<OutputTensor> TypedOutputs(const ModelConfig& config, const std::vector<std::vector<float>>& items,
                                       const AnswerLayout& answer);

// The elements of `from` (row-major, `from_shape`) inside a tensor of
// `to_shape` (the same rank): the common box copied, the rest zero.
std::string CopyBox(absl::string_view from, const std::vector<int64_t>& from_shape,
                    const std::vector<int64_t>& to_shape, size_t element_size);

// Element `index` of a tensor of `type` held as `bytes`. REQUIRES: type
// is not BYTES and the element exists.
WireScalar ElementAt(DataType type, absl::string_view bytes, int64_t index);

// The elements of a BYTES tensor in SetRaw's form, or InvalidArgument
// naming `name` when `raw` is not a whole number of them.
absl::StatusOr<std::vector<absl::string_view>> SplitBytesElements(absl::string_view raw, absl::string_view name);

// IEEE 754 half precision (FP16), rounded to nearest even.
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t half);

}  // namespace tutti

#endif  // TUTTI_CODEC_TYPED_TENSORS_H_
