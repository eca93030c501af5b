// Names the calling thread, as `top -H`, `perf` and debuggers show it (at
// most 15 characters are kept). Diagnostics only.
//
// YieldCpuToOthers: the calling thread runs only on CPU time no other
// thread of the machine wants (Linux SCHED_IDLE; best effort elsewhere).
// For background work that must never slow serving down.
#ifndef TUTTI_CORE_THREAD_NAME_H_
#define TUTTI_CORE_THREAD_NAME_H_

#include <pthread.h>
#include <sched.h>

#include <string>

namespace tutti {

inline void SetThreadName(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

inline void YieldCpuToOthers() {
#ifdef SCHED_IDLE
  const sched_param param{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);  // best effort
#endif
}

}  // namespace tutti

#endif  // TUTTI_CORE_THREAD_NAME_H_
