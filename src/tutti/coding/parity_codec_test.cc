#include "tutti/coding/parity_codec.h"

#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParityCodecTest, SumAddsPresentItemsAndTreatsAbsentAsZero) {
  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kSum, 3, {2, 2});
  const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
  std::vector<float> p(4, -1.0f);
  const float* items[] = {a.data(), nullptr, b.data()};
  codec.Encode(items, p.data());
  EXPECT_THAT(p, ElementsAre(11, 22, 33, 44));
}

TEST(ParityCodecTest, ConcatTilesDownsizedImagesSideBySideForKTwo) {
  // k = 2: a 1×2 grid, so each 2×4 image is halved in width (pairs averaged).
  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kConcat, 2, {1, 2, 4});
  const std::vector<float> a = {1, 3, 5, 7,  //
                                2, 4, 6, 8};
  const std::vector<float> b = {10, 10, 0, 20,  //
                                30, 50, 1, 1};
  std::vector<float> p(8);
  const float* items[] = {a.data(), b.data()};
  codec.Encode(items, p.data());
  EXPECT_THAT(p, ElementsAre(2, 6, 10, 10,  //
                             3, 7, 40, 1));
}

TEST(ParityCodecTest, ConcatUsesATwoByTwoGridForKThreeAndFourWithBlankCells) {
  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kConcat, 3, {2, 2});
  const std::vector<float> a = {4, 4, 4, 4}, b = {0, 4, 8, 12}, c = {1, 1, 1, 1};
  std::vector<float> p(4);
  const float* items[] = {a.data(), b.data(), c.data()};
  codec.Encode(items, p.data());
  // Each 2×2 image becomes one pixel: its mean. Cell 3 stays blank.
  EXPECT_THAT(p, ElementsAre(4, 6, 1, 0));
}

TEST(ParityCodecTest, DecodeSubtractsTheAvailableOutputs) {
  const std::vector<float> parity = {10, 10, 10}, o1 = {1, 2, 3}, o2 = {4, 4, 4};
  std::vector<float> out(3);
  const float* others[] = {o1.data(), nullptr, o2.data()};
  ParityCodec::Decode(parity, others, out.data());
  EXPECT_THAT(out, ElementsAre(5, 4, 3));
}

// With a linear deployed model F(x) = Wx and the sum encoder, F itself is a
// perfect parity model, so every reconstruction is exact.
TEST(ParityCodecTest, SumCodeRebuildsALinearModelExactlyForEveryKAndPosition) {
  const int in = 6, out = 3;
  std::vector<float> w(in * out);
  std::iota(w.begin(), w.end(), -4.0f);
  auto F = [&](const float* x) {
    std::vector<float> y(out, 0.0f);
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) y[o] += w[o * in + i] * x[i];
    return y;
  };
  for (int k = kMinParityK; k <= kMaxParityK; ++k) {
    ParityCodec codec = *ParityCodec::Create(ParityEncoder::kSum, k, {in});
    std::vector<std::vector<float>> xs(k, std::vector<float>(in));
    for (int j = 0; j < k; ++j)
      for (int i = 0; i < in; ++i) xs[j][i] = static_cast<float>((j + 1) * (i - 2)) * 0.5f;
    std::vector<const float*> items;
    for (auto& x : xs) items.push_back(x.data());
    std::vector<float> p(in);
    codec.Encode(items, p.data());
    const std::vector<float> fp = F(p.data());
    std::vector<std::vector<float>> fx;
    for (auto& x : xs) fx.push_back(F(x.data()));
    for (int missing = 0; missing < k; ++missing) {
      std::vector<const float*> others;
      for (int j = 0; j < k; ++j) others.push_back(j == missing ? nullptr : fx[j].data());
      std::vector<float> rebuilt(out);
      ParityCodec::Decode(fp, others, rebuilt.data());
      EXPECT_EQ(rebuilt, fx[missing]) << "k " << k << " missing " << missing;
    }
  }
}

TEST(ParityCodecTest, RejectsBadParameters) {
  EXPECT_THAT(ParityCodec::Create(ParityEncoder::kSum, 1, {4}).status().message(), HasSubstr("k must be in [2, 4]"));
  EXPECT_THAT(ParityCodec::Create(ParityEncoder::kSum, 5, {4}).status().message(), HasSubstr("got 5"));
  EXPECT_FALSE(ParityCodec::Create(ParityEncoder::kSum, 2, {}).ok());
  EXPECT_THAT(ParityCodec::Create(ParityEncoder::kConcat, 2, {784}).status().message(), HasSubstr("image"));
  EXPECT_THAT(ParityCodec::Create(ParityEncoder::kConcat, 4, {1, 27, 28}).status().message(),
              HasSubstr("does not divide a 27x28 image"));
  EXPECT_TRUE(ParityCodec::Create(ParityEncoder::kConcat, 4, {1, 28, 28}).ok());
  EXPECT_EQ(*ParseParityEncoder("concat"), ParityEncoder::kConcat);
  EXPECT_THAT(ParseParityEncoder("xor").status().message(), HasSubstr("unknown parity encoder 'xor'"));
}

}  // namespace
}  // namespace tutti
