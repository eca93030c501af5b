// A server of one model copied from a fixture repository (testdata/), for
// the tests that serve it end to end over HTTP and gRPC on ports of the
// kernel's choosing.
#ifndef TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_
#define TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/server/server.h"
#include "tutti/testing/temp_dir.h"

namespace tutti::testing {

// Copies `fixture_repo`/`name`/1 (its config.yaml and `weights`) into
// `dir`, appends `config_suffix` (the profiles the fixture leaves out) to
// its config, and serves it with `serve_yaml` (HTTP and gRPC on port 0).
inline absl::StatusOr<std::unique_ptr<Server>> ServeFixture(const TempDir& dir, const std::string& fixture_repo,
                                                            const std::string& name, const std::string& weights,
                                                            const std::string& config_suffix, Clock* clock,
                                                            const std::string& serve_yaml = "") {
  const std::string source = fixture_repo + "/" + name + "/1/";
  std::filesystem::create_directories(dir.path() + "/" + name + "/1");
  std::filesystem::copy_file(source + weights, dir.path() + "/" + name + "/1/" + weights);
  std::ifstream in(source + "config.yaml");
  std::stringstream config;
  config << in.rdbuf() << config_suffix;
  dir.WriteFile(name + "/1/config.yaml", config.str());
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  if (!repo.ok()) return repo.status();
  absl::StatusOr<ServerConfig> serve = ParseServerConfig("http: {port: 0}\ngrpc: {port: 0}\n" + serve_yaml);
  if (!serve.ok()) return serve.status();
  serve = ResolveServerConfig(*serve, *repo);
  if (!serve.ok()) return serve.status();
  return Server::Start(*repo, *serve, clock);
}

}  // namespace tutti::testing

#endif  // TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_
