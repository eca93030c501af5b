// FNV-1a, 64 bits: a fast, stable (across runs and machines) hash of bytes,
// for fingerprints (stage weights, state digests, string ids) — not for
// security.
#ifndef TUTTI_CORE_FNV_HASH_H_
#define TUTTI_CORE_FNV_HASH_H_

#include <cstddef>
#include <cstdint>

namespace tutti {

inline constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
inline constexpr uint64_t kFnvPrime = 1099511628211ULL;

// Continues hash `h` over `n` bytes at `data`.
inline uint64_t FnvMix(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

}  // namespace tutti

#endif  // TUTTI_CORE_FNV_HASH_H_
