#include "tutti/core/zoo_profiles.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tutti/core/file_util.h"

namespace tutti {
namespace {

constexpr absl::string_view kHeader = "model,alpha_ms,beta_ms,slo_ms";

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

}  // namespace

absl::StatusOr<std::vector<ZooModel>> ParseZooCsv(const std::string& text, int max_batch) {
  std::vector<ZooModel> models;
  absl::flat_hash_set<std::string> seen;
  bool header_seen = false;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    if (!header_seen) {
      if (line != kHeader) {
        return LineError(line_no, absl::StrCat("expected header '", kHeader, "', got '", line, "'"));
      }
      header_seen = true;
      continue;
    }
    std::vector<absl::string_view> cols = absl::StrSplit(line, ',');
    if (cols.size() != 4) {
      return LineError(line_no, absl::StrCat("expected 4 columns, got ", cols.size()));
    }
    double ms[3];
    for (int i = 0; i < 3; ++i) {
      if (!absl::SimpleAtod(cols[i + 1], &ms[i])) {
        return LineError(line_no, absl::StrCat("'", cols[i + 1], "' is not a number"));
      }
    }
    const std::string name(cols[0]);
    if (!seen.insert(name).second) return LineError(line_no, absl::StrCat("model ", name, " repeated"));
    absl::StatusOr<LatencyProfile> profile = LatencyProfile::Linear(Millis(ms[0]), Millis(ms[1]), max_batch);
    if (!profile.ok()) return LineError(line_no, profile.status().message());
    if (ms[2] <= 0) return LineError(line_no, "slo_ms must be positive");
    models.push_back(ZooModel{name, *std::move(profile), Millis(ms[2])});
  }
  if (!header_seen) return absl::InvalidArgumentError("zoo table is empty (no header)");
  return models;
}

absl::StatusOr<std::vector<ZooModel>> LoadZooCsv(const std::string& path, int max_batch) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<ZooModel>> models = ParseZooCsv(*text, max_batch);
  if (!models.ok()) {
    return absl::Status(models.status().code(), absl::StrCat(path, ": ", models.status().message()));
  }
  return models;
}

namespace {
constexpr std::pair<const char*, int64_t> kGpuMemory[] = {
    {"1080ti", 11'000'000'000}, {"a100", 40'000'000'000}, {"v100", 32'000'000'000}};
}  // namespace

std::optional<int64_t> ZooGpuMemoryBytes(const std::string& profile) {
  for (const auto& [name, bytes] : kGpuMemory) {
    if (profile == name) return bytes;
  }
  return std::nullopt;
}

std::vector<std::string> ZooGpuNames() {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : kGpuMemory) names.emplace_back(name);
  return names;
}

}  // namespace tutti
