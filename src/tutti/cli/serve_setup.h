// What `tutti serve` and the distributed commands (scheduler, frontend,
// backend, cluster) share: reading a serve config and waiting for a stop
// signal.
#ifndef TUTTI_CLI_SERVE_SETUP_H_
#define TUTTI_CLI_SERVE_SETUP_H_

#include <signal.h>

#include <string>

#include "absl/status/statusor.h"
#include "tutti/server/server_config.h"

namespace tutti::cli {

// The serve config at `path` ("" : the built-in defaults), not yet resolved.
// Errors name the file.
absl::StatusOr<ServerConfig> ReadServeConfig(const std::string& path);

// Blocks SIGINT and SIGTERM for this thread and every thread started after
// it, so that Wait() takes them synchronously. Construct it first.
class StopSignals {
 public:
  StopSignals();
  // The signal that came, or 0 when `duration_s` (> 0) passed first.
  int Wait(double duration_s);
  // "Interrupt", "Terminated", or "time is up" for 0.
  static std::string Describe(int sig);

 private:
  sigset_t signals_;
};

}  // namespace tutti::cli

#endif  // TUTTI_CLI_SERVE_SETUP_H_
