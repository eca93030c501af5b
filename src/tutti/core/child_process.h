// ChildProcess: a program started by Tutti (etcd, or a `tutti` process of a
// local cluster) whose output is captured, so that the launcher can wait for
// its "ready" line and show it on failure. A child never outlives its
// launcher: it gets SIGTERM when the thread that started it ends — the
// process exiting or crashing included (Linux's PR_SET_PDEATHSIG) — so a
// killed `tutti cluster` or a crashed test leaves no etcd or `tutti`
// processes behind. Start children from a thread that lives as long as
// they should.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_CORE_CHILD_PROCESS_H_
#define TUTTI_CORE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tutti/core/time.h"

namespace tutti {

class ChildProcess {
 public:
  // How the kernel schedules the child's threads (sched(7)).
  enum class CpuPolicy {
    kNormal,  // SCHED_OTHER
    // SCHED_BATCH: the child, woken by a message, does not preempt the
    // process that sent it (which is about to wait anyway); it runs on an
    // idle core or when the sender yields. For processes that share a few
    // cores and wake each other many times a millisecond (a local
    // cluster's schedulers and backends): fewer context switches.
    kBatch,
  };
  // Starts argv[0] (a path) with `argv`; stdout and stderr are captured,
  // and copied to `echo_prefix`-prefixed lines on stderr unless it is empty.
  // Errors: the program cannot be started.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                            const std::string& echo_prefix = "",
                                                            CpuPolicy policy = CpuPolicy::kNormal);
  // Terminate(): SIGTERM, then SIGKILL if it has not exited within 10 s.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Waits until the output contains `needle`; returns the first line holding
  // it. DeadlineExceeded after `timeout`, FailedPrecondition if the process
  // exits first (both carry the output's tail).
  absl::StatusOr<std::string> WaitForOutput(const std::string& needle, Duration timeout);
  std::string output() const;
  // Its output has ended: it has exited (or closed stdout and stderr).
  bool exited() const;

  // Sends `signal` (e.g. SIGKILL) without waiting.
  void Signal(int signal);
  // SIGTERM, then SIGKILL after `grace`; returns the wait status.
  int Terminate(Duration grace = 10 * kSecond);

 private:
  ChildProcess() = default;
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  std::string echo_prefix_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  bool eof_ ABSL_GUARDED_BY(mu_) = false;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
  int wait_status_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread reader_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (for programs, like
// etcd, that cannot report the port they bound).
absl::StatusOr<int> PickFreePort();

}  // namespace tutti

#endif  // TUTTI_CORE_CHILD_PROCESS_H_
