#include "tutti/core/file_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tutti {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat("file not found: ", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot open ", path));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
  return out.str();
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create directory for ", path, ": ", ec.message()));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << contents;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace tutti
