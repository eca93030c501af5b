#include "tutti/core/yaml_map_reader.h"

#include "absl/strings/str_format.h"

namespace tutti {

absl::StatusOr<YAML::Node> LoadYaml(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(absl::StrFormat("YAML syntax error at line %d, column %d: %s",
                                                      e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace tutti
