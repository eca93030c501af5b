#include "tutti/cli/stop_signals.h"

#include <cstring>
#include <ctime>

namespace tutti::cli {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int StopSignals::Wait(double duration_s) {
  int sig = 0;
  if (duration_s > 0) {
    timespec timeout{static_cast<time_t>(duration_s),
                     static_cast<long>((duration_s - static_cast<time_t>(duration_s)) * 1e9)};
    sig = sigtimedwait(&signals_, nullptr, &timeout);
    return sig > 0 ? sig : 0;
  }
  sigwait(&signals_, &sig);
  return sig;
}

std::string StopSignals::Describe(int sig) { return sig > 0 ? strsignal(sig) : "time is up"; }

}  // namespace tutti::cli
