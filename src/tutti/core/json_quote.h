// JsonQuote: text as a JSON string literal (quotes, escapes), for writers
// that assemble JSON from formatted pieces.
#ifndef TUTTI_CORE_JSON_QUOTE_H_
#define TUTTI_CORE_JSON_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace tutti {

inline std::string JsonQuote(absl::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return buffer.GetString();
}

}  // namespace tutti

#endif  // TUTTI_CORE_JSON_QUOTE_H_
