// Reader for the IDX files of (Fashion-)MNIST, as shipped by Debian's
// dataset-fashion-mnist package in /usr/share/datasets/fashion-mnist
// (gzip-compressed or not).
//
// IDX: two zero bytes, a type byte (0x08 = unsigned byte, the only one these
// datasets use), the number of dimensions, each dimension as a big-endian
// 32-bit integer, then the data in row-major order.
#ifndef TUTTI_DATASETS_FASHION_MNIST_H_
#define TUTTI_DATASETS_FASHION_MNIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tutti {

inline constexpr char kDefaultFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;

// The class names of Fashion-MNIST labels 0…9.
extern const char* const kFashionMnistClassNames[kFashionMnistClasses];

// A parsed IDX file of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

// Labelled grayscale images.
struct ImageSet {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // size() * rows * cols, image-major, row-major
  std::vector<uint8_t> labels;  // one per image, 0 … 9

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t image_size() const { return rows * cols; }
  const uint8_t* image(int64_t i) const { return pixels.data() + i * image_size(); }

  // Images [begin, begin + count) (clipped to the set).
  ImageSet Slice(int64_t begin, int64_t count) const;

  // The images whose label is one of `classes`, in order (all when empty).
  ImageSet OfClasses(const std::vector<int>& classes) const;

  // Images [begin, begin + count) as FP32 pixels in [0, 1] (value / 255), the
  // input Tutti's Fashion-MNIST models take. REQUIRES: the range is inside.
  std::vector<float> ToFloat(int64_t begin, int64_t count) const;
};

enum class Split { kTrain, kTest };

// Parses IDX bytes (already decompressed). InvalidArgument on a bad magic,
// a type other than unsigned byte, or a length that disagrees with the dims.
absl::StatusOr<IdxArray> ParseIdx(absl::string_view bytes);

// Reads a file, gunzipping it if it starts with the gzip magic.
absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path);

// Loads one split from `dir`, accepting `<stem>` or `<stem>.gz` for each of
// the images and labels files. NotFound, telling how to install the data,
// when the files are absent; InvalidArgument if images and labels disagree.
absl::StatusOr<ImageSet> LoadFashionMnist(const std::string& dir, Split split);

}  // namespace tutti

#endif  // TUTTI_DATASETS_FASHION_MNIST_H_
