// Loads the papers' model zoo tables: CSV files with the columns
// model,alpha_ms,beta_ms,slo_ms (Symphony, appendix C, Tables 3 and 4; copied
// into data/profiles/). Lines starting with '#' are comments.
#ifndef TUTTI_CORE_ZOO_PROFILES_H_
#define TUTTI_CORE_ZOO_PROFILES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/latency_profile.h"

namespace tutti {

struct ZooModel {
  std::string name;
  LatencyProfile profile;  // exact linear profile α·b + β, b = 1 … max_batch
  Duration slo = 0;        // the latency objective the paper used for it
};

// Parses a zoo table. Errors name the line: a wrong header, a wrong column
// count, a value that is not a number, an invalid α/β, a repeated model.
absl::StatusOr<std::vector<ZooModel>> ParseZooCsv(const std::string& text, int max_batch);

// ReadFile + ParseZooCsv; the path is prefixed to parse errors.
absl::StatusOr<std::vector<ZooModel>> LoadZooCsv(const std::string& path, int max_batch);

// The memory of the GPU a profile name stands for ("a100": the 40 GB A100;
// "1080ti": 11 GB; "v100": the 32 GB V100 of Clockwork), in bytes; none for
// other names.
std::optional<int64_t> ZooGpuMemoryBytes(const std::string& profile);
// The profile names ZooGpuMemoryBytes knows.
std::vector<std::string> ZooGpuNames();

}  // namespace tutti

#endif  // TUTTI_CORE_ZOO_PROFILES_H_
