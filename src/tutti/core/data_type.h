// Tensor element types, named as in the KServe v2 / Open Inference Protocol
// ("FP32", "INT64", …), which Tutti uses in model configs and on the wire.
#ifndef TUTTI_CORE_DATA_TYPE_H_
#define TUTTI_CORE_DATA_TYPE_H_

#include <cstddef>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

namespace tutti {

enum class DataType {
  kBool, kUint8, kUint16, kUint32, kUint64, kInt8, kInt16, kInt32, kInt64,
  kFp16, kFp32, kFp64, kBytes,
};

// "FP32" → kFp32; nullopt for an unknown name (names are case-sensitive, as
// in the protocol).
std::optional<DataType> ParseDataType(absl::string_view name);

// kFp32 → "FP32".
absl::string_view DataTypeName(DataType type);

// "BOOL, UINT8, …, BYTES", for error messages.
std::string AllDataTypeNames();

// Bytes per element; 0 for kBytes (variable length).
size_t DataTypeSize(DataType type);

}  // namespace tutti

#endif  // TUTTI_CORE_DATA_TYPE_H_
