#include "tutti/codec/typed_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/user_text.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

template <typename T>
void Put(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

template <typename T>
T Get(absl::string_view bytes, int64_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

// An integer element of [lo, hi], from a wire integer.
template <typename T>
bool PutInteger(const WireScalar& v, std::string* out) {
  if (v.kind == WireScalar::kInt) {
    if (v.i < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
    if (v.i > 0 && static_cast<uint64_t>(v.i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    Put(static_cast<T>(v.i), out);
    return true;
  }
  if (v.kind == WireScalar::kUint) {
    if (v.u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    Put(static_cast<T>(v.u), out);
    return true;
  }
  return false;
}

// The slots of `slots` (of max_bytes each) in SetRaw's form.
std::string SlotsToWire(absl::string_view slots, int64_t max_bytes) {
  std::string out;
  for (size_t at = 0; at + 4 + max_bytes <= slots.size(); at += 4 + max_bytes) {
    const absl::string_view element = BytesSlotElement(slots.data() + at, max_bytes);
    Put(static_cast<uint32_t>(element.size()), &out);
    out.append(element.data(), element.size());
  }
  return out;
}

absl::Status TooLong(const TensorSpec& spec, size_t size) {
  return Bad(absl::StrCat("input '", spec.name, "' has an element of ", size, " bytes; its max_element_bytes is ",
                          spec.max_element_bytes));
}

double AsDouble(const WireScalar& v) {
  return v.kind == WireScalar::kInt ? static_cast<double>(v.i)
         : v.kind == WireScalar::kUint ? static_cast<double>(v.u)
                                       : v.d;
}

std::string Range(DataType type) {
  switch (type) {
    case DataType::kBool: return "true or false";
    case DataType::kUint8: return "integers from 0 to 255";
    case DataType::kUint16: return "integers from 0 to 65535";
    case DataType::kUint32: return "integers from 0 to 4294967295";
    case DataType::kUint64: return "integers from 0 to 2^64-1";
    case DataType::kInt8: return "integers from -128 to 127";
    case DataType::kInt16: return "integers from -32768 to 32767";
    case DataType::kInt32: return "integers from -2^31 to 2^31-1";
    case DataType::kInt64: return "integers from -2^63 to 2^63-1";
    case DataType::kFp16: return "numbers within FP16's range (±65504)";
    case DataType::kFp32: return "numbers within FP32's range";
    case DataType::kFp64: return "numbers";
    case DataType::kBytes: break;
  }
  return "strings";
}

}  // namespace

uint16_t FloatToHalf(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: infinity
  if (abs < 0x38800000u) {  // a half subnormal (or zero)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // value = mantissa × 2^(e-150) = half × 2^-24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ffu);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  uint32_t f;
  if (exponent == 0x1fu) {
    f = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    f = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    f = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    f = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &f, 4);
  return value;
}

TypedInputs::TypedInputs(const ModelConfig& config)
    : config_(config), shapes_(config.inputs.size()), data_(config.inputs.size()) {}

int64_t TypedInputs::Bytes(int input) const {
  int64_t n = config_.inputs[input].ElementSize();
  for (int64_t d : shapes_[input]) n *= d;
  return n;
}

absl::StatusOr<int> TypedInputs::Add(absl::string_view name, absl::string_view datatype,
                                     const std::vector<int64_t>& shape) {
  int index = -1;
  for (size_t i = 0; i < config_.inputs.size(); ++i) {
    if (config_.inputs[i].name == name) index = static_cast<int>(i);
  }
  if (index < 0) {
    std::vector<std::string> names;
    for (const TensorSpec& t : config_.inputs) names.push_back(absl::StrCat("'", t.name, "'"));
    return Bad(absl::StrCat("unexpected input ", QuoteUserText(name), "; model '", config_.name, "' takes inputs ",
                            absl::StrJoin(names, ", ")));
  }
  const TensorSpec& spec = config_.inputs[index];
  if (!shapes_[index].empty()) return Bad(absl::StrCat("input '", spec.name, "' is given twice"));
  TUTTI_RETURN_IF_ERROR(CheckTensorShape(config_, spec, datatype, shape).status());
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    if (spec.shape[d] != -1) continue;
    if (length_ != 0 && shape[d + 1] != length_) {
      return Bad(absl::StrCat("input '", spec.name, "' has length ", shape[d + 1], " along a variable dimension "
                              "where the request has ", length_, ": its variable dimensions have one length"));
    }
    length_ = shape[d + 1];
  }
  if (length_ > 0 && length_ > config_.shape_buckets.back()) {
    return Bad(absl::StrCat("input '", spec.name, "' has length ", length_, "; model '", config_.name,
                            "' takes at most ", config_.shape_buckets.back(), " (its largest shape bucket)"));
  }
  if (batch_ != 0 && shape[0] != batch_) {
    return Bad(absl::StrCat("input '", spec.name, "' has a batch of ", shape[0], " but an earlier input has ",
                            batch_, ": every input has the same first dimension"));
  }
  batch_ = static_cast<int>(shape[0]);
  shapes_[index] = shape;
  data_[index].reserve(Bytes(index));
  return index;
}

absl::Status TypedInputs::Append(int input, const WireScalar& v) {
  const TensorSpec& spec = config_.inputs[input];
  std::string* out = &data_[input];
  bool ok = false;
  switch (spec.datatype) {
    case DataType::kBool:
      ok = v.kind == WireScalar::kBool;
      if (ok) Put<uint8_t>(v.b ? 1 : 0, out);
      break;
    case DataType::kUint8: ok = PutInteger<uint8_t>(v, out); break;
    case DataType::kUint16: ok = PutInteger<uint16_t>(v, out); break;
    case DataType::kUint32: ok = PutInteger<uint32_t>(v, out); break;
    case DataType::kUint64: ok = PutInteger<uint64_t>(v, out); break;
    case DataType::kInt8: ok = PutInteger<int8_t>(v, out); break;
    case DataType::kInt16: ok = PutInteger<int16_t>(v, out); break;
    case DataType::kInt32: ok = PutInteger<int32_t>(v, out); break;
    case DataType::kInt64: ok = PutInteger<int64_t>(v, out); break;
    case DataType::kFp16:
    case DataType::kFp32:
    case DataType::kFp64: {
      if (v.kind == WireScalar::kBool) break;
      const double d = AsDouble(v);
      if (spec.datatype == DataType::kFp64) {
        Put(d, out);
      } else if (spec.datatype == DataType::kFp32) {
        if (std::abs(d) > std::numeric_limits<float>::max()) break;
        Put(static_cast<float>(d), out);
      } else {
        if (std::abs(d) > 65504.0) break;
        Put(FloatToHalf(static_cast<float>(d)), out);
      }
      ok = true;
      break;
    }
    case DataType::kBytes:
      if (v.kind != WireScalar::kBytes) break;
      if (static_cast<int64_t>(v.s.size()) > spec.max_element_bytes) return TooLong(spec, v.s.size());
      AppendBytesSlot(v.s, spec.max_element_bytes, out);
      ok = true;
      break;
  }
  if (ok) return absl::OkStatus();
  return Bad(absl::StrCat("input '", spec.name, "' is ", DataTypeName(spec.datatype), ": its data must be ",
                          Range(spec.datatype)));
}

absl::Status TypedInputs::SetRaw(int input, absl::string_view bytes) {
  const TensorSpec& spec = config_.inputs[input];
  const int64_t needed = Bytes(input);
  if (spec.datatype == DataType::kBytes) {
    TUTTI_ASSIGN_OR_RETURN(std::vector<absl::string_view> elements, SplitBytesElements(bytes, spec.name));
    if (static_cast<int64_t>(elements.size()) * spec.ElementSize() != needed) {
      return Bad(absl::StrCat("input '", spec.name, "' has ", elements.size(), " elements of binary data; shape [",
                              absl::StrJoin(shapes_[input], ", "), "] needs ", needed / spec.ElementSize()));
    }
    std::string& out = data_[input];
    out.clear();
    for (absl::string_view e : elements) {
      if (static_cast<int64_t>(e.size()) > spec.max_element_bytes) return TooLong(spec, e.size());
      AppendBytesSlot(e, spec.max_element_bytes, &out);
    }
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(bytes.size()) != needed) {
    return Bad(absl::StrCat("input '", spec.name, "' has ", bytes.size(), " bytes of binary data; shape [",
                            absl::StrJoin(shapes_[input], ", "), "] of ", DataTypeName(spec.datatype), " needs ",
                            needed));
  }
  data_[input].assign(bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status TypedInputs::Finish(InferRequest* out) {
  for (size_t i = 0; i < config_.inputs.size(); ++i) {
    const TensorSpec& spec = config_.inputs[i];
    if (!shapes_[i].empty()) continue;
    if (!spec.optional || batch_ == 0) {
      return Bad(absl::StrCat("input '", spec.name, "' is missing; model '", config_.name, "' takes ",
                              config_.inputs.size(), " inputs"));
    }
    shapes_[i] = {batch_};
    for (int64_t d : spec.shape) shapes_[i].push_back(d == -1 ? length_ : d);
    data_[i].assign(Bytes(static_cast<int>(i)), '\0');
  }
  for (size_t i = 0; i < config_.inputs.size(); ++i) {
    const TensorSpec& spec = config_.inputs[i];
    const int64_t needed = Bytes(static_cast<int>(i));
    if (static_cast<int64_t>(data_[i].size()) != needed) {
      const int64_t size = spec.ElementSize();
      return Bad(absl::StrCat("input '", spec.name, "' has ", data_[i].size() / size, " values; shape [",
                              absl::StrJoin(shapes_[i], ", "), "] needs ", needed / size));
    }
  }
  out->batch = batch_;
  out->data.clear();
  if (config_.shape_buckets.empty()) {
    PackRecords(config_.inputs, data_, batch_, &out->data);
    return absl::OkStatus();
  }
  // Padded to the smallest bucket that holds the request.
  const auto bucket = std::lower_bound(config_.shape_buckets.begin(), config_.shape_buckets.end(), length_);
  out->bucket = static_cast<int>(bucket - config_.shape_buckets.begin());
  out->answer.length = length_;
  out->answer.bucket_size = *bucket;
  const std::vector<TensorSpec> padded = TensorsAt(config_.inputs, *bucket);
  for (size_t i = 0; i < padded.size(); ++i) {
    std::vector<int64_t> to{batch_};
    to.insert(to.end(), padded[i].shape.begin(), padded[i].shape.end());
    if (to != shapes_[i]) data_[i] = CopyBox(data_[i], shapes_[i], to, padded[i].ElementSize());
  }
  PackRecords(padded, data_, batch_, &out->data);
  return absl::OkStatus();
}

std::string CopyBox(absl::string_view from, const std::vector<int64_t>& from_shape,
                    const std::vector<int64_t>& to_shape, size_t element_size) {
  int64_t to_elements = 1;
  for (int64_t d : to_shape) to_elements *= d;
  std::string to(to_elements * element_size, '\0');
  const size_t rank = from_shape.size();
  if (rank == 0) return std::string(from);
  std::vector<int64_t> box(rank), from_stride(rank, 1), to_stride(rank, 1);
  for (size_t d = rank; d-- > 0;) {
    box[d] = std::min(from_shape[d], to_shape[d]);
    if (box[d] == 0) return to;
    if (d + 1 < rank) {
      from_stride[d] = from_stride[d + 1] * from_shape[d + 1];
      to_stride[d] = to_stride[d + 1] * to_shape[d + 1];
    }
  }
  // Every row of the box (its index along all but the last dimension).
  std::vector<int64_t> at(rank, 0);
  while (true) {
    int64_t src = 0, dst = 0;
    for (size_t d = 0; d + 1 < rank; ++d) src += at[d] * from_stride[d], dst += at[d] * to_stride[d];
    std::memcpy(to.data() + dst * element_size, from.data() + src * element_size, box[rank - 1] * element_size);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++at[d] < box[d]) break;
      at[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return to;
  }
}

std::vector<OutputTensor> TypedOutputs(const ModelConfig& config, const std::vector<std::vector<float>>& items,
                                       const AnswerLayout& answer) {
  const int n = static_cast<int>(items.size());
  const bool variable = !config.shape_buckets.empty();
  const std::vector<TensorSpec> ran = variable ? TensorsAt(config.outputs, answer.bucket_size) : config.outputs;
  std::vector<float> words;
  words.reserve(n * RecordWords(ran));
  for (const std::vector<float>& item : items) words.insert(words.end(), item.begin(), item.end());
  std::vector<std::string> bytes = UnpackRecords(ran, words, n);
  const std::vector<std::string>& asked = answer.outputs;
  std::vector<OutputTensor> out;
  for (size_t t = 0; t < ran.size(); ++t) {
    const TensorSpec& spec = config.outputs[t];
    if (!asked.empty() && std::find(asked.begin(), asked.end(), spec.name) == asked.end()) continue;
    OutputTensor& o = out.emplace_back(OutputTensor{&spec, std::move(bytes[t]), {n}});
    o.shape.insert(o.shape.end(), ran[t].shape.begin(), ran[t].shape.end());
    if (variable) {
      std::vector<int64_t> cut = {n};
      for (int64_t d : spec.shape) cut.push_back(d == -1 ? answer.length : d);
      if (cut != o.shape) {
        o.bytes = CopyBox(o.bytes, o.shape, cut, spec.ElementSize());
        o.shape = std::move(cut);
      }
    }
    if (spec.datatype == DataType::kBytes) o.bytes = SlotsToWire(o.bytes, spec.max_element_bytes);
  }
  return out;
}

WireScalar ElementAt(DataType type, absl::string_view bytes, int64_t index) {
  WireScalar v;
  auto integer = [&v](int64_t i) { v.kind = WireScalar::kInt, v.i = i; };
  auto unsigned_integer = [&v](uint64_t u) { v.kind = WireScalar::kUint, v.u = u; };
  switch (type) {
    case DataType::kBool: v.kind = WireScalar::kBool, v.b = Get<uint8_t>(bytes, index) != 0; break;
    case DataType::kUint8: unsigned_integer(Get<uint8_t>(bytes, index)); break;
    case DataType::kUint16: unsigned_integer(Get<uint16_t>(bytes, index)); break;
    case DataType::kUint32: unsigned_integer(Get<uint32_t>(bytes, index)); break;
    case DataType::kUint64: unsigned_integer(Get<uint64_t>(bytes, index)); break;
    case DataType::kInt8: integer(Get<int8_t>(bytes, index)); break;
    case DataType::kInt16: integer(Get<int16_t>(bytes, index)); break;
    case DataType::kInt32: integer(Get<int32_t>(bytes, index)); break;
    case DataType::kInt64: integer(Get<int64_t>(bytes, index)); break;
    case DataType::kFp16: v.d = HalfToFloat(Get<uint16_t>(bytes, index)); break;
    case DataType::kFp32: v.d = Get<float>(bytes, index); break;
    case DataType::kFp64: v.d = Get<double>(bytes, index); break;
    case DataType::kBytes: break;
  }
  return v;
}

absl::StatusOr<std::vector<absl::string_view>> SplitBytesElements(absl::string_view raw, absl::string_view name) {
  std::vector<absl::string_view> elements;
  size_t at = 0;
  while (at < raw.size()) {
    if (raw.size() - at < 4) {
      return Bad(absl::StrCat("input '", name, "' is BYTES: its binary data is elements of a 4-byte length and "
                              "that many bytes, but ", raw.size() - at, " bytes are left over"));
    }
    const uint32_t length = Get<uint32_t>(raw.substr(at), 0);
    at += 4;
    if (length > raw.size() - at) {
      return Bad(absl::StrCat("input '", name, "' has a BYTES element of length ", length, " but only ",
                              raw.size() - at, " bytes follow it"));
    }
    elements.push_back(raw.substr(at, length));
    at += length;
  }
  return elements;
}

}  // namespace tutti
