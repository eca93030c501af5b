// Names the calling thread, as `top -H`, `perf` and debuggers show it (at
// most 15 characters are kept). Diagnostics only.
#ifndef TUTTI_CORE_THREAD_NAME_H_
#define TUTTI_CORE_THREAD_NAME_H_

#include <pthread.h>

#include <string>

namespace tutti {

inline void SetThreadName(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

}  // namespace tutti

#endif  // TUTTI_CORE_THREAD_NAME_H_
