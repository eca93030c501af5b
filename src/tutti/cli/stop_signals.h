// Waiting for a stop signal, as `tutti serve` and the distributed commands
// (scheduler, frontend, backend, cluster) do.
#ifndef TUTTI_CLI_STOP_SIGNALS_H_
#define TUTTI_CLI_STOP_SIGNALS_H_

#include <signal.h>

#include <string>

namespace tutti::cli {

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

#endif  // TUTTI_CLI_STOP_SIGNALS_H_
