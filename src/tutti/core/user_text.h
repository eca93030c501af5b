// Text that came from outside (a request's id, a model name in a URL) on
// its way into answers and error messages, which must stay valid UTF-8
// (JSON, gRPC status messages) and of bounded size (gRPC clients refuse
// status metadata over a few kilobytes).
#ifndef TUTTI_CORE_USER_TEXT_H_
#define TUTTI_CORE_USER_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace tutti {

// `text` with every byte that is not part of a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF)
// replaced by U+FFFD.
std::string ValidUtf8(absl::string_view text);

// ValidUtf8(text) cut to `max_bytes` (at a character boundary), with the
// number of bytes left out: abc… (+9872 bytes).
std::string UserText(absl::string_view text, size_t max_bytes = 128);
// The same in single quotes: 'abc…' (+9872 bytes).
std::string QuoteUserText(absl::string_view text, size_t max_bytes = 128);

}  // namespace tutti

#endif  // TUTTI_CORE_USER_TEXT_H_
