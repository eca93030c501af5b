// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed with
// everything in it when the object is destroyed.
#ifndef TUTTI_TESTING_TEMP_DIR_H_
#define TUTTI_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace tutti::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/tutti_test_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `contents` to path()/relative, creating parent directories.
  std::string WriteFile(const std::string& relative, const std::string& contents) const {
    const std::filesystem::path p = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_TEMP_DIR_H_
