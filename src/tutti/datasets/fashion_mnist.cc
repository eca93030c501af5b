#include "tutti/datasets/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/file_util.h"
#include "tutti/core/status_macros.h"

namespace tutti {

const char* const kFashionMnistClassNames[kFashionMnistClasses] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

namespace {

absl::StatusOr<std::string> Gunzip(const std::string& compressed, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // truncated input
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt or truncated gzip data"));
  }
  return out;
}

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Finds `stem` or `stem.gz` in `dir`.
absl::StatusOr<std::string> FindFile(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    const std::string path = dir + "/" + name;
    if (std::filesystem::is_regular_file(path)) return path;
  }
  return absl::NotFoundError(absl::StrCat(
      "Fashion-MNIST not found: no ", stem, "[.gz] in ", dir,
      ". Install it with `sudo apt-get install dataset-fashion-mnist` (or run scripts/setup.sh), "
      "or point --data at a directory holding the IDX files."));
}

}  // namespace

ImageSet ImageSet::Slice(int64_t begin, int64_t count) const {
  begin = std::clamp<int64_t>(begin, 0, size());
  count = std::clamp<int64_t>(count, 0, size() - begin);
  ImageSet out;
  out.rows = rows;
  out.cols = cols;
  out.pixels.assign(image(begin), image(begin) + count * image_size());
  out.labels.assign(labels.begin() + begin, labels.begin() + begin + count);
  return out;
}

ImageSet ImageSet::OfClasses(const std::vector<int>& classes) const {
  if (classes.empty()) return *this;
  ImageSet out;
  out.rows = rows;
  out.cols = cols;
  for (int64_t i = 0; i < size(); ++i) {
    if (std::find(classes.begin(), classes.end(), labels[i]) == classes.end()) continue;
    out.pixels.insert(out.pixels.end(), image(i), image(i) + image_size());
    out.labels.push_back(labels[i]);
  }
  return out;
}

std::vector<float> ImageSet::ToFloat(int64_t begin, int64_t count) const {
  std::vector<float> out(count * image_size());
  const uint8_t* src = image(begin);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(src[i]) / 255.0f;
  return out;
}

absl::StatusOr<IdxArray> ParseIdx(absl::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0) {
    return absl::InvalidArgumentError("not an IDX file (bad magic number)");
  }
  if (p[2] != 0x08) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDX element type 0x", absl::Hex(p[2]), " unsupported (only unsigned byte)"));
  }
  const int ndims = p[3];
  if (ndims < 1 || bytes.size() < 4 + 4 * static_cast<size_t>(ndims)) {
    return absl::InvalidArgumentError("IDX header truncated");
  }
  IdxArray out;
  uint64_t count = 1;
  for (int i = 0; i < ndims; ++i) {
    out.dims.push_back(BigEndian32(p + 4 + 4 * i));
    count *= out.dims.back();
  }
  const size_t header = 4 + 4 * ndims;
  if (bytes.size() - header != count) {
    return absl::InvalidArgumentError(absl::StrCat("IDX data has ", bytes.size() - header,
                                                   " bytes but dimensions [",
                                                   absl::StrJoin(out.dims, ", "), "] need ", count));
  }
  out.data.assign(p + header, p + bytes.size());
  return out;
}

absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path) {
  absl::StatusOr<std::string> raw = ReadFile(path);
  if (!raw.ok()) return raw.status();
  const absl::string_view bytes = *raw;
  if (absl::StartsWith(bytes, "\x1f\x8b")) return Gunzip(*raw, path);
  return raw;
}

absl::StatusOr<ImageSet> LoadFashionMnist(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  TUTTI_ASSIGN_OR_RETURN(std::string images_path, FindFile(dir, prefix + "-images-idx3-ubyte"));
  TUTTI_ASSIGN_OR_RETURN(std::string labels_path, FindFile(dir, prefix + "-labels-idx1-ubyte"));
  auto parse = [](const std::string& path) -> absl::StatusOr<IdxArray> {
    TUTTI_ASSIGN_OR_RETURN(std::string bytes, ReadMaybeGzipped(path));
    absl::StatusOr<IdxArray> idx = ParseIdx(bytes);
    if (!idx.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", idx.status().message()));
    return idx;
  };
  TUTTI_ASSIGN_OR_RETURN(IdxArray images, parse(images_path));
  TUTTI_ASSIGN_OR_RETURN(IdxArray labels, parse(labels_path));
  if (images.dims.size() != 3 || labels.dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": expected 3-D images and 1-D labels, got ", images.dims.size(), "-D and ",
        labels.dims.size(), "-D"));
  }
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": ", images.dims[0], " images but ",
                                                   labels.dims[0], " labels"));
  }
  for (uint8_t l : labels.data) {
    if (l >= kFashionMnistClasses) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", l, " out of range"));
    }
  }
  ImageSet set;
  set.rows = images.dims[1];
  set.cols = images.dims[2];
  set.pixels = std::move(images.data);
  set.labels = std::move(labels.data);
  return set;
}

}  // namespace tutti
