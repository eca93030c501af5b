#include "tutti/core/data_type.h"

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(DataTypeTest, RoundTripsEveryProtocolName) {
  for (absl::string_view name : {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES"}) {
    std::optional<DataType> t = ParseDataType(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(DataTypeName(*t), name);
  }
}

TEST(DataTypeTest, UnknownAndWrongCaseNamesAreRejected) {
  EXPECT_FALSE(ParseDataType("FLOAT").has_value());
  EXPECT_FALSE(ParseDataType("fp32").has_value());
  EXPECT_FALSE(ParseDataType("").has_value());
}

TEST(DataTypeTest, SizesAndNameList) {
  EXPECT_EQ(DataTypeSize(DataType::kFp32), 4u);
  EXPECT_EQ(DataTypeSize(DataType::kInt64), 8u);
  EXPECT_EQ(DataTypeSize(DataType::kBytes), 0u);
  EXPECT_EQ(AllDataTypeNames().substr(0, 11), "BOOL, UINT8");
}

}  // namespace
}  // namespace tutti
