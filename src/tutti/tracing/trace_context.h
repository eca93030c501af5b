// W3C Trace Context (https://www.w3.org/TR/trace-context/): the identity of
// one span of a distributed trace, the `traceparent` header that carries it
// between processes, and fresh random ids.
#ifndef TUTTI_TRACING_TRACE_CONTEXT_H_
#define TUTTI_TRACING_TRACE_CONTEXT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tutti {

using TraceId = std::array<uint8_t, 16>;

// A span: its trace, its own id and its parent's (0: a root span). Default:
// no trace, which every recorder ignores.
struct TraceContext {
  TraceId trace_id{};
  uint64_t span_id = 0;
  uint64_t parent_id = 0;
  bool sampled = false;

  // A trace that is being recorded.
  bool recording() const { return sampled && span_id != 0; }
};

// A `traceparent` header's value: "00-<trace id: 32 hex>-<parent span id:
// 16 hex>-<flags: 2 hex>", lowercase. A later version is read by the same
// four fields (more may follow after a '-'); version ff, upper case, an
// all-zero id or a wrong length is malformed: nullopt, and W3C says to start
// a new trace then. The result's span_id is the caller's span, sampled its
// flag's lowest bit.
std::optional<TraceContext> ParseTraceparent(absl::string_view header);

// `context` as a version-00 `traceparent` value, naming its span_id.
std::string FormatTraceparent(const TraceContext& context);

std::string TraceIdHex(const TraceId& id);
std::string SpanIdHex(uint64_t id);

// Random non-zero ids (a per-thread generator seeded from the system).
TraceId NewTraceId();
uint64_t NewSpanId();
// A uniform draw in [0, 1) from the same generator.
double UniformDraw();

}  // namespace tutti

#endif  // TUTTI_TRACING_TRACE_CONTEXT_H_
