// Reads back the spans a tracer exported to a file (tracing/tracer.h: one
// OTLP/JSON ExportTraceServiceRequest per line), for tests.
#ifndef TUTTI_TESTING_SPAN_FILE_H_
#define TUTTI_TESTING_SPAN_FILE_H_

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace tutti::testing {

struct ReadSpan {
  std::string trace, id, parent, name;
  int kind = 0;
  int64_t start = 0, end = 0;
  int status = 0;
};

// Every span of every line of the file at `path`, by span id.
inline std::map<std::string, ReadSpan> ReadSpans(const std::string& path) {
  std::map<std::string, ReadSpan> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    rapidjson::Document d;
    EXPECT_FALSE(d.Parse(line.c_str()).HasParseError()) << line;
    if (d.HasParseError()) continue;
    for (const auto& rs : d["resourceSpans"].GetArray()) {
      for (const auto& ss : rs["scopeSpans"].GetArray()) {
        for (const auto& s : ss["spans"].GetArray()) {
          ReadSpan r{s["traceId"].GetString(), s["spanId"].GetString(),
                     s.HasMember("parentSpanId") ? s["parentSpanId"].GetString() : "", s["name"].GetString(),
                     s["kind"].GetInt(), std::stoll(s["startTimeUnixNano"].GetString()),
                     std::stoll(s["endTimeUnixNano"].GetString()), s["status"]["code"].GetInt()};
          out[r.id] = r;
        }
      }
    }
  }
  return out;
}

// The names of `parent`'s children.
inline std::vector<std::string> Children(const std::map<std::string, ReadSpan>& spans, const std::string& parent) {
  std::vector<std::string> names;
  for (const auto& [id, s] : spans) {
    if (s.parent == parent) names.push_back(s.name);
  }
  return names;
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_SPAN_FILE_H_
