#include "tutti/core/user_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0.
size_t SequenceLength(absl::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t n = SequenceLength(text);
    if (n == 0) {
      out += kReplacement;
      text.remove_prefix(1);
    } else {
      out.append(text.data(), n);
      text.remove_prefix(n);
    }
  }
  return out;
}

namespace {

// The longest prefix of `text` of at most `max_bytes` that ends at a character boundary.
size_t Cut(absl::string_view text, size_t max_bytes) {
  size_t cut = 0;
  while (cut < text.size()) {
    const size_t n = std::max<size_t>(1, SequenceLength(text.substr(cut)));
    if (cut + n > max_bytes) break;
    cut += n;
  }
  return cut;
}

}  // namespace

std::string UserText(absl::string_view text, size_t max_bytes) {
  const size_t cut = Cut(text, max_bytes);
  if (cut == text.size()) return ValidUtf8(text);
  return absl::StrCat(ValidUtf8(text.substr(0, cut)), "… (+", text.size() - cut, " bytes)");
}

std::string QuoteUserText(absl::string_view text, size_t max_bytes) {
  const size_t cut = Cut(text, max_bytes);
  if (cut == text.size()) return absl::StrCat("'", ValidUtf8(text), "'");
  return absl::StrCat("'", ValidUtf8(text.substr(0, cut)), "…' (+", text.size() - cut, " bytes)");
}

}  // namespace tutti
