#include "tutti/tracing/trace_context.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tutti {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is malformed too
}

// `text`'s 2·n hex digits into `out`; false if any is not one.
bool ReadHex(absl::string_view text, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const int hi = HexDigit(text[2 * i]), lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::mt19937_64& Generator() {
  thread_local std::mt19937_64 generator{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                         std::random_device{}()};
  return generator;
}

}  // namespace

std::optional<TraceContext> ParseTraceparent(absl::string_view h) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
  constexpr size_t kLength = 55;
  if (h.size() < kLength || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  uint8_t version = 0, flags = 0;
  if (!ReadHex(h.substr(0, 2), &version, 1) || version == 0xff) return std::nullopt;
  if (version == 0 ? h.size() != kLength : h.size() > kLength && h[kLength] != '-') return std::nullopt;
  TraceContext c;
  uint8_t parent[8];
  if (!ReadHex(h.substr(3, 32), c.trace_id.data(), 16) || !ReadHex(h.substr(36, 16), parent, 8) ||
      !ReadHex(h.substr(53, 2), &flags, 1)) {
    return std::nullopt;
  }
  for (uint8_t b : parent) c.span_id = c.span_id << 8 | b;
  if (c.trace_id == TraceId{} || c.span_id == 0) return std::nullopt;
  c.sampled = (flags & 1) != 0;
  return c;
}

std::string FormatTraceparent(const TraceContext& c) {
  return absl::StrCat("00-", TraceIdHex(c.trace_id), "-", SpanIdHex(c.span_id), c.sampled ? "-01" : "-00");
}

std::string TraceIdHex(const TraceId& id) {
  std::string out;
  for (uint8_t b : id) absl::StrAppendFormat(&out, "%02x", b);
  return out;
}

std::string SpanIdHex(uint64_t id) { return absl::StrFormat("%016x", id); }

TraceId NewTraceId() {
  TraceId id;
  do {
    const uint64_t hi = Generator()(), lo = Generator()();
    for (int i = 0; i < 8; ++i) {
      id[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
      id[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
  } while (id == TraceId{});
  return id;
}

uint64_t NewSpanId() {
  uint64_t id = 0;
  while (id == 0) id = Generator()();
  return id;
}

double UniformDraw() { return std::uniform_real_distribution<double>(0, 1)(Generator()); }

}  // namespace tutti
