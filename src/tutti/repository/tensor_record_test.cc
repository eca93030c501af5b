#include "tutti/repository/tensor_record.h"

#include <cstring>

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(TensorRecordTest, OneFp32TensorIsItsValues) {
  const std::vector<TensorSpec> specs = {{"x", DataType::kFp32, {3}}};
  ASSERT_TRUE(IsPlainFp32(specs));
  EXPECT_EQ(RecordWords(specs), 3);
  const std::vector<float> values = {1.5f, -2, 3, 4, 5, 6};
  std::string bytes(sizeof(float) * values.size(), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  std::vector<float> words;
  PackRecords(specs, {bytes}, 2, &words);
  EXPECT_EQ(words, values);
}

TEST(TensorRecordTest, TypedTensorsArePaddedToWordsAndComeBackUnchanged) {
  const std::vector<TensorSpec> specs = {{"a", DataType::kUint8, {3}},   // 3 bytes → 1 word
                                         {"b", DataType::kInt64, {2}},   // 16 bytes → 4 words
                                         {"c", DataType::kFp16, {1}},    // 2 bytes → 1 word
                                         {"d", DataType::kBool, {5}}};   // 5 bytes → 2 words
  EXPECT_FALSE(IsPlainFp32(specs));
  EXPECT_EQ(RecordWords(specs), 8);
  std::vector<std::string> tensors;
  for (const TensorSpec& s : specs) {
    std::string t(2 * ItemBytes(s), '\0');
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<char>(i * 7 + s.name[0]);
    tensors.push_back(t);
  }
  std::vector<float> words = {42.0f};  // appended after what is there
  PackRecords(specs, tensors, 2, &words);
  ASSERT_EQ(words.size(), 1u + 2 * 8);
  EXPECT_EQ(words[0], 42.0f);
  // Item 1's record starts with its 3 bytes of `a`.
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(words.data() + 1 + 8), tensors[0].data() + 3, 3), 0);
  EXPECT_EQ(UnpackRecords(specs, absl::MakeConstSpan(words).subspan(1), 2), tensors);
}

}  // namespace
}  // namespace tutti
