// The source tree root, for tests that read checked-in files (data/,
// testdata/). CTest sets TUTTI_SOURCE_DIR and runs tests from the root.
#ifndef TUTTI_TESTING_SOURCE_DIR_H_
#define TUTTI_TESTING_SOURCE_DIR_H_

#include <cstdlib>
#include <string>

namespace tutti::testing {

inline std::string SourceDir() {
  const char* dir = std::getenv("TUTTI_SOURCE_DIR");
  return dir ? dir : ".";
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_SOURCE_DIR_H_
