#include "tutti/core/data_type.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tutti {
namespace {

struct Entry {
  DataType type;
  absl::string_view name;
  size_t size;
};

constexpr std::array<Entry, 13> kTypes = {{
    {DataType::kBool, "BOOL", 1},     {DataType::kUint8, "UINT8", 1},
    {DataType::kUint16, "UINT16", 2}, {DataType::kUint32, "UINT32", 4},
    {DataType::kUint64, "UINT64", 8}, {DataType::kInt8, "INT8", 1},
    {DataType::kInt16, "INT16", 2},   {DataType::kInt32, "INT32", 4},
    {DataType::kInt64, "INT64", 8},   {DataType::kFp16, "FP16", 2},
    {DataType::kFp32, "FP32", 4},     {DataType::kFp64, "FP64", 8},
    {DataType::kBytes, "BYTES", 0},
}};

}  // namespace

std::optional<DataType> ParseDataType(absl::string_view name) {
  for (const Entry& e : kTypes) {
    if (e.name == name) return e.type;
  }
  return std::nullopt;
}

absl::string_view DataTypeName(DataType type) { return kTypes[static_cast<size_t>(type)].name; }

size_t DataTypeSize(DataType type) { return kTypes[static_cast<size_t>(type)].size; }

std::string AllDataTypeNames() {
  return absl::StrJoin(kTypes, ", ", [](std::string* out, const Entry& e) { absl::StrAppend(out, e.name); });
}

}  // namespace tutti
