#include "tutti/codec/typed_tensors.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

ModelConfig TwoInputs() {
  ModelConfig c;
  c.name = "m";
  c.max_batch_size = 4;
  c.inputs = {{"ids", DataType::kInt8, {2}}, {"mask", DataType::kBool, {2}}};
  c.outputs = {{"y", DataType::kUint16, {1}}};
  return c;
}

WireScalar Int(int64_t v) { return {.kind = WireScalar::kInt, .i = v}; }
WireScalar Uint(uint64_t v) { return {.kind = WireScalar::kUint, .u = v}; }
WireScalar Double(double v) { return {.kind = WireScalar::kDouble, .d = v}; }
WireScalar Bool(bool v) { return {.kind = WireScalar::kBool, .b = v}; }

TEST(TypedTensorsTest, ChecksNameDatatypeShapeAndBatchOfEachInput) {
  const ModelConfig c = TwoInputs();
  TypedInputs in(c);
  EXPECT_THAT(in.Add("x", "INT8", {1, 2}).status().message(), HasSubstr("takes inputs 'ids', 'mask'"));
  EXPECT_THAT(in.Add("ids", "INT16", {1, 2}).status().message(), HasSubstr("input 'ids' has datatype INT16"));
  EXPECT_THAT(in.Add("ids", "INT8", {1, 3}).status().message(), HasSubstr("input 'ids' has shape [1, 3]"));
  EXPECT_THAT(in.Add("ids", "INT8", {5, 2}).status().message(), HasSubstr("exceeds model 'm' max_batch_size 4"));
  ASSERT_EQ(*in.Add("ids", "INT8", {2, 2}), 0);
  EXPECT_THAT(in.Add("ids", "INT8", {2, 2}).status().message(), HasSubstr("'ids' is given twice"));
  EXPECT_THAT(in.Add("mask", "BOOL", {1, 2}).status().message(), HasSubstr("input 'mask' has a batch of 1"));
  InferRequest r;
  EXPECT_THAT(in.Finish(&r).message(), HasSubstr("input 'mask' is missing"));
}

TEST(TypedTensorsTest, RefusesValuesOutsideTheDatatypeNamingTheTensor) {
  const ModelConfig c = TwoInputs();
  TypedInputs in(c);
  ASSERT_TRUE(in.Add("ids", "INT8", {1, 2}).ok());
  ASSERT_TRUE(in.Add("mask", "BOOL", {1, 2}).ok());
  EXPECT_THAT(in.Append(0, Int(128)).message(), HasSubstr("input 'ids' is INT8: its data must be integers from -128"));
  EXPECT_FALSE(in.Append(0, Int(-129)).ok());
  EXPECT_FALSE(in.Append(0, Double(1.5)).ok());
  EXPECT_FALSE(in.Append(0, Uint(std::numeric_limits<uint64_t>::max())).ok());
  EXPECT_THAT(in.Append(1, Int(1)).message(), HasSubstr("input 'mask' is BOOL: its data must be true or false"));
  ASSERT_TRUE(in.Append(0, Int(-128)).ok());
  InferRequest r;
  EXPECT_THAT(in.Finish(&r).message(), HasSubstr("input 'ids' has 1 values; shape [1, 2] needs 2"));
  EXPECT_THAT(in.SetRaw(1, "abc").message(), HasSubstr("input 'mask' has 3 bytes of binary data; shape [1, 2] of BOOL "
                                                       "needs 2"));
}

// Every fixed-size datatype: values appended as a protocol carries them
// come back from the packed record as the same values.
TEST(TypedTensorsTest, EveryDatatypeRoundTripsThroughARecord) {
  struct Case {
    DataType type;
    std::vector<WireScalar> values;
  };
  const std::vector<Case> cases = {
      {DataType::kBool, {Bool(true), Bool(false)}},
      {DataType::kUint8, {Uint(0), Uint(255)}},
      {DataType::kUint16, {Int(65535), Uint(7)}},
      {DataType::kUint32, {Uint(4294967295u), Int(0)}},
      {DataType::kUint64, {Uint(std::numeric_limits<uint64_t>::max()), Uint(1)}},
      {DataType::kInt8, {Int(-128), Int(127)}},
      {DataType::kInt16, {Int(-32768), Int(32767)}},
      {DataType::kInt32, {Int(std::numeric_limits<int32_t>::min()), Int(5)}},
      {DataType::kInt64, {Int(std::numeric_limits<int64_t>::min()), Int(std::numeric_limits<int64_t>::max())}},
      {DataType::kFp16, {Double(-2.5), Double(65504)}},
      {DataType::kFp32, {Double(0.1f), Double(-3e38)}},
      {DataType::kFp64, {Double(0.1), Double(-1e300)}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(DataTypeName(k.type));
    ModelConfig c;
    c.name = "echo";
    c.max_batch_size = 2;
    c.inputs = {{"a", k.type, {1}}, {"pad", DataType::kUint8, {1}}};
    c.outputs = c.inputs;
    TypedInputs in(c);
    ASSERT_TRUE(in.Add("pad", "UINT8", {2, 1}).ok());
    ASSERT_TRUE(in.Add("a", std::string(DataTypeName(k.type)), {2, 1}).ok());
    for (const WireScalar& v : k.values) ASSERT_TRUE(in.Append(0, v).ok());
    ASSERT_TRUE(in.Append(1, Uint(9)).ok());
    ASSERT_TRUE(in.Append(1, Uint(8)).ok());
    InferRequest r;
    ASSERT_TRUE(in.Finish(&r).ok());
    ASSERT_EQ(r.batch, 2);
    const size_t per_item = r.data.size() / 2;
    const std::vector<std::vector<float>> items = {{r.data.begin(), r.data.begin() + per_item},
                                                   {r.data.begin() + per_item, r.data.end()}};
    const std::vector<OutputTensor> out = TypedOutputs(c, items, {});
    for (int i = 0; i < 2; ++i) {
      const WireScalar got = ElementAt(k.type, out[0].bytes, i), want = k.values[i];
      switch (want.kind) {
        case WireScalar::kBool: EXPECT_EQ(got.b, want.b); break;
        case WireScalar::kInt:
          EXPECT_EQ(got.kind == WireScalar::kInt ? got.i : static_cast<int64_t>(got.u), want.i);
          break;
        case WireScalar::kUint: EXPECT_EQ(got.u, want.u); break;
        case WireScalar::kDouble:
          EXPECT_EQ(got.d, k.type == DataType::kFp32 ? static_cast<float>(want.d) : want.d);
          break;
        case WireScalar::kBytes: ADD_FAILURE() << "BYTES has its own test"; break;
      }
    }
    EXPECT_EQ(ElementAt(DataType::kUint8, out[1].bytes, 1).u, 8u);
  }
}

WireScalar Bytes(absl::string_view v) { return {.kind = WireScalar::kBytes, .s = v}; }

// BYTES elements of any content, JSON strings or length-prefixed binary,
// each in a fixed slot of the record; answered length-prefixed.
TEST(TypedTensorsTest, BytesTravelInFixedSlotsAndComeBackLengthPrefixed) {
  ModelConfig c;
  c.name = "text";
  c.max_batch_size = 2;
  c.inputs = {{"s", DataType::kBytes, {2}}};
  c.inputs[0].max_element_bytes = 5;
  c.outputs = c.inputs;
  const std::string wire = std::string("\x03\0\0\0a\0b\0\0\0\0\x05\0\0\0hello\x01\0\0\0z", 25);
  InferRequest raw, appended;
  TypedInputs a(c);
  ASSERT_TRUE(a.Add("s", "BYTES", {2, 2}).ok());
  ASSERT_TRUE(a.SetRaw(0, wire).ok());
  ASSERT_TRUE(a.Finish(&raw).ok());
  TypedInputs b(c);
  ASSERT_TRUE(b.Add("s", "BYTES", {2, 2}).ok());
  for (absl::string_view e : {absl::string_view("a\0b", 3), absl::string_view(), absl::string_view("hello"),
                              absl::string_view("z")}) {
    ASSERT_TRUE(b.Append(0, Bytes(e)).ok());
  }
  ASSERT_TRUE(b.Finish(&appended).ok());
  EXPECT_EQ(raw.data, appended.data);
  EXPECT_EQ(raw.data.size(), 2 * RecordWords(c.inputs));  // 2 × 2 slots of 4 + 5 bytes, in whole words
  const size_t per_item = raw.data.size() / 2;
  const std::vector<std::vector<float>> items = {{raw.data.begin(), raw.data.begin() + per_item},
                                                 {raw.data.begin() + per_item, raw.data.end()}};
  const std::vector<OutputTensor> out = TypedOutputs(c, items, {});
  EXPECT_EQ(out[0].bytes, wire);
  EXPECT_EQ(*SplitBytesElements(out[0].bytes, "s"),
            (std::vector<absl::string_view>{absl::string_view("a\0b", 3), "", "hello", "z"}));

  TypedInputs bad(c);
  ASSERT_TRUE(bad.Add("s", "BYTES", {1, 2}).ok());
  EXPECT_THAT(bad.Append(0, Bytes("longer")).message(),
              HasSubstr("input 's' has an element of 6 bytes; its max_element_bytes is 5"));
  EXPECT_THAT(bad.Append(0, Int(1)).message(), HasSubstr("input 's' is BYTES: its data must be strings"));
  EXPECT_THAT(bad.SetRaw(0, wire).message(), HasSubstr("input 's' has 4 elements of binary data; shape [1, 2] needs 2"));
  EXPECT_THAT(bad.SetRaw(0, std::string("\x09\0\0\0abc", 7)).message(),
              HasSubstr("input 's' has a BYTES element of length 9 but only 3 bytes follow it"));
  EXPECT_THAT(bad.SetRaw(0, std::string("\x01\0", 2)).message(), HasSubstr("2 bytes are left over"));
}

// An optional input left out reaches the model as zeros; a required one
// left out is refused.
TEST(TypedTensorsTest, AnOptionalInputLeftOutIsZeros) {
  ModelConfig c = TwoInputs();
  c.inputs[1].optional = true;
  TypedInputs in(c);
  ASSERT_TRUE(in.Add("ids", "INT8", {2, 2}).ok());
  for (int v : {1, 2, 3, 4}) ASSERT_TRUE(in.Append(0, Int(v)).ok());
  InferRequest r;
  ASSERT_TRUE(in.Finish(&r).ok());
  const std::vector<std::string> got = UnpackRecords(c.inputs, r.data, 2);
  EXPECT_EQ(got[0], std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(got[1], std::string(4, '\0'));
  TypedInputs only_mask(c);
  ASSERT_TRUE(only_mask.Add("mask", "BOOL", {1, 2}).ok());
  ASSERT_TRUE(only_mask.SetRaw(1, std::string("\x01\x00", 2)).ok());
  EXPECT_THAT(only_mask.Finish(&r).message(), HasSubstr("input 'ids' is missing"));
}

TEST(TypedTensorsTest, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);               // halfway to 65536: infinity
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);     // halfway: to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);     // halfway: to even, up
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // halfway to it: to even zero
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite non-negative half survives the round trip
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h);
  }
}

// A model of variable length: each request padded to its shape bucket,
// its variable outputs cut back.
TEST(TypedTensorsTest, VariableLengthPadsToTheBucketAndCutsTheAnswerBack) {
  ModelConfig c;
  c.name = "text";
  c.max_batch_size = 4;
  c.inputs = {{"ids", DataType::kInt32, {-1}}, {"pair", DataType::kUint8, {2, -1}}};
  c.outputs = {{"echo", DataType::kInt32, {-1}}, {"n", DataType::kInt32, {1}}};
  c.shape_buckets = {4, 8};
  TypedInputs in(c);
  ASSERT_TRUE(in.Add("ids", "INT32", {1, 3}).ok());
  EXPECT_THAT(in.Add("pair", "UINT8", {1, 2, 5}).status().message(),
              HasSubstr("input 'pair' has length 5 along a variable dimension where the request has 3"));
  ASSERT_TRUE(in.Add("pair", "UINT8", {1, 2, 3}).ok());
  for (int v : {7, 8, 9}) ASSERT_TRUE(in.Append(0, Int(v)).ok());
  for (int v : {1, 2, 3, 4, 5, 6}) ASSERT_TRUE(in.Append(1, Int(v)).ok());
  InferRequest r;
  ASSERT_TRUE(in.Finish(&r).ok());
  EXPECT_EQ(r.bucket, 0);
  EXPECT_EQ(r.answer.length, 3);
  EXPECT_EQ(r.answer.bucket_size, 4);
  const std::vector<TensorSpec> at4 = TensorsAt(c.inputs, 4);
  const std::vector<std::string> padded = UnpackRecords(at4, r.data, 1);
  const std::vector<int32_t> ids = {7, 8, 9, 0};
  EXPECT_EQ(padded[0], std::string(reinterpret_cast<const char*>(ids.data()), 16));
  EXPECT_EQ(padded[1], std::string("\x01\x02\x03\x00\x04\x05\x06\x00", 8));  // each row padded

  // The answer at bucket 4: `echo` cut to the request's 3.
  std::vector<float> words;
  const std::vector<int32_t> echo = {7, 8, 9, 0}, n = {3};
  PackRecords(TensorsAt(c.outputs, 4), {std::string(reinterpret_cast<const char*>(echo.data()), 16),
                                        std::string(reinterpret_cast<const char*>(n.data()), 4)}, 1, &words);
  const std::vector<OutputTensor> out = TypedOutputs(c, {words}, r.answer);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(out[0].bytes, std::string(reinterpret_cast<const char*>(echo.data()), 12));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{1, 1}));

  TypedInputs too_long(c);
  EXPECT_THAT(too_long.Add("ids", "INT32", {1, 9}).status().message(),
              HasSubstr("input 'ids' has length 9; model 'text' takes at most 8 (its largest shape bucket)"));
  TypedInputs six(c);
  ASSERT_TRUE(six.Add("ids", "INT32", {1, 6}).ok());
  ASSERT_TRUE(six.SetRaw(0, std::string(24, '\0')).ok());
  ASSERT_TRUE(six.Add("pair", "UINT8", {1, 2, 6}).ok());
  ASSERT_TRUE(six.SetRaw(1, std::string(12, '\0')).ok());
  ASSERT_TRUE(six.Finish(&r).ok());
  EXPECT_EQ(r.bucket, 1);
  EXPECT_EQ(r.answer.bucket_size, 8);
}

}  // namespace
}  // namespace tutti
