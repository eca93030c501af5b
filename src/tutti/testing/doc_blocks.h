// Reading documentation from tests: the fenced block a reference page marks
// with `<!-- every-key: NAME -->`, and the fields a parser asks for while
// reading it (MapReader::CurrentFieldLog), so that a test can check that a
// reference holds every key its parser reads and nothing it refuses.
#ifndef TUTTI_TESTING_DOC_BLOCKS_H_
#define TUTTI_TESTING_DOC_BLOCKS_H_

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tutti/core/yaml_map_reader.h"
#include "tutti/testing/source_dir.h"

namespace tutti::testing {

// The body of the first fenced block after `<!-- every-key: NAME -->` in the
// page at `path` (relative to the source tree); "" if there is none.
inline std::string MarkedBlock(const std::string& path, const std::string& name) {
  std::ifstream in(SourceDir() + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  const size_t marker = page.find("<!-- every-key: " + name + " -->");
  if (marker == std::string::npos) return "";
  const size_t open = page.find("```", marker);
  const size_t body = page.find('\n', open);
  const size_t close = page.find("\n```", body);
  if (open == std::string::npos || body == std::string::npos || close == std::string::npos) return "";
  return page.substr(body + 1, close - body);
}

// Records the fields read while alive; Missing() lists those a document
// never had, list indices made generic ("executors[].kind").
class FieldRecorder {
 public:
  FieldRecorder() { MapReader::CurrentFieldLog() = &log_; }
  ~FieldRecorder() { MapReader::CurrentFieldLog() = nullptr; }

  std::set<std::string> Missing() const {
    std::set<std::string> asked, present;
    static const std::regex index(R"(\[[0-9]+\])");
    for (const auto& [field, had] : log_) {
      const std::string generic = std::regex_replace(field, index, "[]");
      asked.insert(generic);
      if (had) present.insert(generic);
    }
    std::set<std::string> missing;
    for (const std::string& f : asked) {
      if (!present.contains(f)) missing.insert(f);
    }
    return missing;
  }

 private:
  MapReader::FieldLog log_;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_DOC_BLOCKS_H_
