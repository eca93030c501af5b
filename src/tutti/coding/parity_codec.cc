#include "tutti/coding/parity_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tutti {

absl::string_view ParityEncoderName(ParityEncoder encoder) {
  return encoder == ParityEncoder::kSum ? "sum" : "concat";
}

absl::StatusOr<ParityEncoder> ParseParityEncoder(absl::string_view name) {
  if (name == "sum") return ParityEncoder::kSum;
  if (name == "concat") return ParityEncoder::kConcat;
  return absl::InvalidArgumentError(absl::StrCat("unknown parity encoder '", name, "' (expected sum or concat)"));
}

ParityCodec::ParityCodec(ParityEncoder encoder, int k, std::vector<int64_t> shape)
    : encoder_(encoder), k_(k), shape_(std::move(shape)) {
  item_elements_ = 1;
  for (int64_t d : shape_) item_elements_ *= d;
}

absl::StatusOr<ParityCodec> ParityCodec::Create(ParityEncoder encoder, int k, std::vector<int64_t> item_shape) {
  if (k < kMinParityK || k > kMaxParityK) {
    return absl::InvalidArgumentError(absl::StrCat("parity k must be in [", kMinParityK, ", ", kMaxParityK,
                                                   "], got ", k));
  }
  if (item_shape.empty() || std::any_of(item_shape.begin(), item_shape.end(), [](int64_t d) { return d < 1; })) {
    return absl::InvalidArgumentError(absl::StrCat("bad query shape [", absl::StrJoin(item_shape, ", "), "]"));
  }
  ParityCodec codec(encoder, k, std::move(item_shape));
  if (encoder == ParityEncoder::kConcat) {
    const std::vector<int64_t>& s = codec.shape_;
    if (s.size() < 2) {
      return absl::InvalidArgumentError("the concat encoder needs queries with at least two dimensions (an image)");
    }
    codec.height_ = s[s.size() - 2];
    codec.width_ = s[s.size() - 1];
    codec.planes_ = codec.item_elements_ / (codec.height_ * codec.width_);
    codec.grid_cols_ = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(k))));
    codec.grid_rows_ = (k + codec.grid_cols_ - 1) / codec.grid_cols_;
    if (codec.height_ % codec.grid_rows_ != 0 || codec.width_ % codec.grid_cols_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("the concat encoder tiles k = ", k, " images in a ",
                                                     codec.grid_rows_, "x", codec.grid_cols_, " grid, which does not "
                                                     "divide a ", codec.height_, "x", codec.width_, " image"));
    }
  }
  return codec;
}

void ParityCodec::Encode(absl::Span<const float* const> items, float* parity) const {
  std::fill(parity, parity + item_elements_, 0.0f);
  if (encoder_ == ParityEncoder::kSum) {
    for (const float* x : items) {
      if (x == nullptr) continue;
      for (int64_t e = 0; e < item_elements_; ++e) parity[e] += x[e];
    }
    return;
  }
  // concat: item i goes to grid cell (i / cols, i % cols); each cell pixel is
  // the mean of the grid_rows × grid_cols block it replaces.
  const int64_t cell_h = height_ / grid_rows_, cell_w = width_ / grid_cols_;
  const float scale = 1.0f / static_cast<float>(grid_rows_ * grid_cols_);
  for (size_t i = 0; i < items.size(); ++i) {
    const float* x = items[i];
    if (x == nullptr) continue;
    const int64_t top = (static_cast<int64_t>(i) / grid_cols_) * cell_h;
    const int64_t left = (static_cast<int64_t>(i) % grid_cols_) * cell_w;
    for (int64_t p = 0; p < planes_; ++p) {
      const float* src = x + p * height_ * width_;
      float* dst = parity + p * height_ * width_;
      for (int64_t y = 0; y < cell_h; ++y) {
        for (int64_t c = 0; c < cell_w; ++c) {
          float sum = 0;
          for (int dy = 0; dy < grid_rows_; ++dy) {
            const float* row = src + (y * grid_rows_ + dy) * width_ + c * grid_cols_;
            for (int dx = 0; dx < grid_cols_; ++dx) sum += row[dx];
          }
          dst[(top + y) * width_ + left + c] = sum * scale;
        }
      }
    }
  }
}

void ParityCodec::Decode(absl::Span<const float> parity_output, absl::Span<const float* const> others, float* out) {
  const size_t n = parity_output.size();
  std::memcpy(out, parity_output.data(), n * sizeof(float));
  for (const float* o : others) {
    if (o == nullptr) continue;
    for (size_t e = 0; e < n; ++e) out[e] -= o[e];
  }
}

}  // namespace tutti
