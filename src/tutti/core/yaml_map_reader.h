// MapReader: reads the fields of one YAML mapping with exact, field-naming
// errors, and reports fields nobody read as unknown (typos). Shared by every
// YAML file Tutti reads: model configs, simulator experiments, serve configs.
#ifndef TUTTI_CORE_YAML_MAP_READER_H_
#define TUTTI_CORE_YAML_MAP_READER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace tutti {

// InvalidArgument "field '<field>': <what>".
inline absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("field '", field, "': ", what));
}

// Reads the fields of one YAML mapping, remembering which were read so that
// the rest can be reported as unknown. `path` prefixes field names in errors.
// `path` prefixes field names in errors ("inputs[0].shape"); "" at the root.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  absl::Status CheckIsMap() const {
    if (node_.IsMap()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        path_.empty() ? "config must be a YAML mapping" : absl::StrCat("'", path_, "' must be a mapping"));
  }

  std::string FieldPath(absl::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }

  // The node at `key`, or an undefined node when absent.
  YAML::Node Get(absl::string_view key) {
    read_.insert(std::string(key));
    YAML::Node n = node_[std::string(key)];
    if (FieldLog* log = CurrentFieldLog()) log->push_back({FieldPath(key), n.IsDefined()});
    return n;
  }

  // Every field the readers on this thread ask for while a log is set, and
  // whether the document had it: how the documentation tests find keys
  // that a reference leaves out.
  using FieldLog = std::vector<std::pair<std::string, bool>>;
  static FieldLog*& CurrentFieldLog() {
    thread_local FieldLog* log = nullptr;
    return log;
  }

  absl::StatusOr<YAML::Node> Require(absl::string_view key) {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) {
      return absl::InvalidArgumentError(absl::StrCat("missing required field '", FieldPath(key), "'"));
    }
    return n;
  }

  template <typename T>
  absl::StatusOr<T> Scalar(absl::string_view key, const YAML::Node& n, absl::string_view kind) {
    if (n.IsScalar()) {
      try {
        return n.as<T>();
      } catch (const YAML::Exception&) {
      }
    }
    return Invalid(FieldPath(key), absl::StrCat("expected ", kind, ", got '",
                                                n.IsScalar() ? n.Scalar() : "a non-scalar", "'"));
  }

  template <typename T>
  absl::StatusOr<T> RequireScalar(absl::string_view key, absl::string_view kind) {
    absl::StatusOr<YAML::Node> n = Require(key);
    if (!n.ok()) return n.status();
    return Scalar<T>(key, *n, kind);
  }

  template <typename T>
  absl::StatusOr<std::optional<T>> OptionalScalar(absl::string_view key, absl::string_view kind) {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return std::optional<T>();
    absl::StatusOr<T> v = Scalar<T>(key, n, kind);
    if (!v.ok()) return v.status();
    return std::optional<T>(*v);
  }

  absl::Status CheckNoUnknownFields() const {
    for (const auto& kv : node_) {
      const std::string key = kv.first.as<std::string>();
      if (!read_.contains(key)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown field '", FieldPath(key), "'"));
      }
    }
    return absl::OkStatus();
  }

 private:
  YAML::Node node_;
  std::string path_;
  absl::flat_hash_set<std::string> read_;
};

// Parses YAML text, turning syntax errors into InvalidArgument with line and
// column.
absl::StatusOr<YAML::Node> LoadYaml(const std::string& text);

}  // namespace tutti

#endif  // TUTTI_CORE_YAML_MAP_READER_H_
