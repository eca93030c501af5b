// Small filesystem helpers that turn failures into absl::Status with the path
// in the message.
#ifndef TUTTI_CORE_FILE_UTIL_H_
#define TUTTI_CORE_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"

namespace tutti {

// The whole file as bytes. NotFound if it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` atomically (a temporary file renamed into
// place), creating parent directories as needed.
absl::Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace tutti

#endif  // TUTTI_CORE_FILE_UTIL_H_
