#include "tutti/core/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const std::vector<std::string>& argv,
                                                                  const std::string& echo_prefix,
                                                                  CpuPolicy policy) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to start");
  if (access(argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot run ", argv[0], ": ", strerror(errno)));
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    // Dies with its launcher (see the header); if the launcher is already
    // gone, at once.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    setpgid(0, 0);  // a terminal's Ctrl-C goes to the launcher, which stops children in order
    if (policy == CpuPolicy::kBatch) {
      const sched_param param{};
      sched_setscheduler(0, SCHED_BATCH, &param);  // kept across exec; best effort
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->echo_prefix_ = echo_prefix;
  child->reader_ = std::thread([c = child.get(), fd = fds[0]] { c->ReadLoop(fd); });
  return child;
}

ChildProcess::~ChildProcess() {
  Terminate();
  if (reader_.joinable()) reader_.join();
}

void ChildProcess::ReadLoop(int fd) {
  char buf[4096];
  std::string line;
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard<std::mutex> lock(mu_);
    output_.append(buf, n);
    if (!echo_prefix_.empty()) {
      for (ssize_t i = 0; i < n; ++i) {
        line.push_back(buf[i]);
        if (buf[i] == '\n') {
          std::cerr << echo_prefix_ << line << std::flush;
          line.clear();
        }
      }
    }
    changed_.notify_all();
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  changed_.notify_all();
}

absl::StatusOr<std::string> ChildProcess::WaitForOutput(const std::string& needle, Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  size_t at = std::string::npos;
  const bool found = changed_.wait_for(lock, std::chrono::nanoseconds(timeout), [&] {
    at = output_.find(needle);
    return at != std::string::npos || eof_;
  });
  const std::string tail = output_.size() > 2000 ? output_.substr(output_.size() - 2000) : output_;
  if (at == std::string::npos) {
    if (!found) return absl::DeadlineExceededError(absl::StrCat("no '", needle, "' in its output:\n", tail));
    return absl::FailedPreconditionError(absl::StrCat("it exited before printing '", needle, "':\n", tail));
  }
  const size_t begin = output_.rfind('\n', at);
  const size_t end = output_.find('\n', at);
  return output_.substr(begin == std::string::npos ? 0 : begin + 1,
                        end == std::string::npos ? std::string::npos : end - (begin == std::string::npos ? 0 : begin + 1));
}

bool ChildProcess::exited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return eof_;
}

std::string ChildProcess::output() const {
  std::lock_guard<std::mutex> lock(mu_);
  return output_;
}

void ChildProcess::Signal(int signal) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!reaped_) kill(pid_, signal);
}

int ChildProcess::Terminate(Duration grace) {
  std::unique_lock<std::mutex> lock(mu_);
  if (reaped_) return wait_status_;
  kill(pid_, SIGTERM);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::nanoseconds(grace);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (std::chrono::steady_clock::now() > give_up) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lock.lock();
    if (reaped_) return wait_status_;
  }
  reaped_ = true;
  wait_status_ = status;
  return status;
}

absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("bind: ", strerror(errno)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace tutti
