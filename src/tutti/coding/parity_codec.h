// ParityCodec: ParM's erasure code over queries and predictions (ParM §4.2,
// ParM, SOSP 2019). k queries X_1..X_k of a deployed model F are encoded
// into one parity query P; a parity model F_P is trained so that
// F_P(P) ≈ Σ F(X_i); when one prediction F(X_j) is unavailable the decoder
// rebuilds it by subtraction:  F(X_j) ≈ F_P(P) − Σ_{i≠j} F(X_i).
//
// Encoders:
//   sum     P = Σ X_i, element by element (the paper's general encoder).
//   concat  each query is downsized by block averaging and the k results are
//           tiled into one query of the same shape (the paper's image-specific
//           encoder, §5.2.3): a 1×2 grid for k = 2, 2×2 for k = 3, 4 (one
//           empty cell for 3). The last two dimensions are the image.
// An absent query (a coding group with fewer than k members at a position)
// encodes as zeros / an empty tile.
//
// Pure functions on FP32 buffers; torch-free. Thread-safe (immutable).
#ifndef TUTTI_CODING_PARITY_CODEC_H_
#define TUTTI_CODING_PARITY_CODEC_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tutti {

enum class ParityEncoder { kSum, kConcat };

absl::string_view ParityEncoderName(ParityEncoder encoder);
// "sum" or "concat"; InvalidArgument otherwise.
absl::StatusOr<ParityEncoder> ParseParityEncoder(absl::string_view name);

inline constexpr int kMinParityK = 2;
inline constexpr int kMaxParityK = 4;

class ParityCodec {
 public:
  // `item_shape`: one query's shape without the batch dimension. InvalidArgument
  // for k outside [2, 4], an empty shape, or (concat) an image whose height
  // and width the grid does not divide.
  static absl::StatusOr<ParityCodec> Create(ParityEncoder encoder, int k, std::vector<int64_t> item_shape);

  ParityEncoder encoder() const { return encoder_; }
  int k() const { return k_; }
  int64_t item_elements() const { return item_elements_; }

  // Writes the parity of `items` (at most k; nullptr entries are absent) into
  // `parity` (item_elements() values). Each present item has item_elements()
  // values.
  void Encode(absl::Span<const float* const> items, float* parity) const;

  // The subtraction decoder: out = parity_output − Σ others (each of
  // parity_output.size() values; nullptr entries are skipped).
  static void Decode(absl::Span<const float> parity_output, absl::Span<const float* const> others,
                     float* out);

 private:
  ParityCodec(ParityEncoder encoder, int k, std::vector<int64_t> shape);

  ParityEncoder encoder_;
  int k_;
  std::vector<int64_t> shape_;
  int64_t item_elements_ = 0;
  // concat only: planes (leading dims), image height/width, grid rows/cols.
  int64_t planes_ = 1, height_ = 0, width_ = 0;
  int grid_rows_ = 1, grid_cols_ = 1;
};

}  // namespace tutti

#endif  // TUTTI_CODING_PARITY_CODEC_H_
