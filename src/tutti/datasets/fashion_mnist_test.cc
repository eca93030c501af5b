#include "tutti/datasets/fashion_mnist.h"

#include <zlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

std::string Idx(std::vector<uint32_t> dims, const std::string& data, uint8_t type = 0x08) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return out + data;
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), bytes.size()), static_cast<int>(bytes.size()));
  gzclose(f);
}

// Two 2×3 images (pixels 0…11) labelled 3 and 7.
void WriteTinySplit(const TempDir& dir, bool gzipped) {
  std::string pixels;
  for (int i = 0; i < 12; ++i) pixels.push_back(static_cast<char>(i));
  const std::string images = Idx({2, 2, 3}, pixels), labels = Idx({2}, "\x03\x07");
  if (gzipped) {
    WriteGzip(dir.path() + "/t10k-images-idx3-ubyte.gz", images);
    WriteGzip(dir.path() + "/t10k-labels-idx1-ubyte.gz", labels);
  } else {
    dir.WriteFile("t10k-images-idx3-ubyte", images);
    dir.WriteFile("t10k-labels-idx1-ubyte", labels);
  }
}

TEST(FashionMnistTest, ReadsPlainAndGzippedIdx) {
  for (bool gz : {false, true}) {
    TempDir dir;
    WriteTinySplit(dir, gz);
    absl::StatusOr<ImageSet> set = LoadFashionMnist(dir.path(), Split::kTest);
    ASSERT_TRUE(set.ok()) << set.status();
    EXPECT_EQ(set->size(), 2);
    EXPECT_EQ(set->rows, 2);
    EXPECT_EQ(set->cols, 3);
    EXPECT_EQ(set->labels, (std::vector<uint8_t>{3, 7}));
    EXPECT_EQ(set->image(1)[0], 6);
    ImageSet second = set->Slice(1, 5);
    EXPECT_EQ(second.size(), 1);
    EXPECT_EQ(second.image(0)[5], 11);
    std::vector<float> f = set->ToFloat(1, 1);
    ASSERT_EQ(f.size(), 6u);
    EXPECT_FLOAT_EQ(f[5], 11.0f / 255.0f);
  }
}

TEST(FashionMnistTest, MissingDatasetSaysHowToInstallIt) {
  TempDir dir;
  absl::StatusOr<ImageSet> set = LoadFashionMnist(dir.path(), Split::kTrain);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(set.status().message(), HasSubstr("no train-images-idx3-ubyte[.gz] in " + dir.path()));
  EXPECT_THAT(set.status().message(), HasSubstr("apt-get install dataset-fashion-mnist"));
}

TEST(FashionMnistTest, RejectsMalformedIdx) {
  EXPECT_THAT(ParseIdx("\x01\x02\x08\x01").status().message(), HasSubstr("bad magic"));
  EXPECT_THAT(ParseIdx(Idx({2}, "ab", 0x0d)).status().message(), HasSubstr("unsupported"));
  EXPECT_THAT(ParseIdx(std::string("\0\0\x08\x03\0\0", 6)).status().message(),
              HasSubstr("header truncated"));
  EXPECT_THAT(ParseIdx(Idx({2, 2}, "abc")).status().message(),
              HasSubstr("IDX data has 3 bytes but dimensions [2, 2] need 4"));
}

TEST(FashionMnistTest, RejectsInconsistentFiles) {
  TempDir dir;
  dir.WriteFile("t10k-images-idx3-ubyte", Idx({2, 1, 1}, "ab"));
  dir.WriteFile("t10k-labels-idx1-ubyte", Idx({3}, "\x01\x02\x03"));
  EXPECT_THAT(LoadFashionMnist(dir.path(), Split::kTest).status().message(),
              HasSubstr("2 images but 3 labels"));
  dir.WriteFile("t10k-labels-idx1-ubyte", Idx({2}, "\x01\x0b"));
  EXPECT_THAT(LoadFashionMnist(dir.path(), Split::kTest).status().message(),
              HasSubstr("label 11 out of range"));
}

TEST(FashionMnistTest, TruncatedGzipIsAnError) {
  TempDir dir;
  WriteTinySplit(dir, true);
  const std::string path = dir.path() + "/t10k-images-idx3-ubyte.gz";
  std::string bytes = *ReadMaybeGzipped(path);  // decompresses fine
  EXPECT_EQ(bytes.size(), 4u + 12u + 12u);
  std::string raw;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  char buf[256];
  raw.append(buf, std::fread(buf, 1, sizeof(buf), f));
  std::fclose(f);
  dir.WriteFile("t10k-images-idx3-ubyte.gz", raw.substr(0, raw.size() / 2));
  EXPECT_THAT(ReadMaybeGzipped(path).status().message(), HasSubstr("corrupt or truncated gzip"));
}

TEST(FashionMnistTest, DebianPackageHasTheFullDataset) {
  absl::StatusOr<ImageSet> train = LoadFashionMnist(kDefaultFashionMnistDir, Split::kTrain);
  absl::StatusOr<ImageSet> test = LoadFashionMnist(kDefaultFashionMnistDir, Split::kTest);
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->rows, 28);
  EXPECT_EQ(test->cols, 28);
  std::vector<int> per_class(kFashionMnistClasses);
  for (uint8_t l : test->labels) ++per_class[l];
  for (int n : per_class) EXPECT_EQ(n, 1000);  // the test set is balanced
}

}  // namespace
}  // namespace tutti
