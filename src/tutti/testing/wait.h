// Waiting on events in tests: with a bound that fails the test loudly
// rather than hanging it. The bound is far beyond any event's usual time
// (it only ends a test that would otherwise never end).
#ifndef TUTTI_TESTING_WAIT_H_
#define TUTTI_TESTING_WAIT_H_

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"

namespace tutti {

inline constexpr std::chrono::seconds kTestWaitBound{60};

// Ends the test binary: an event it waited for did not come.
[[noreturn]] inline void FailWaitingFor(const char* what) {
  ADD_FAILURE() << "waited " << kTestWaitBound.count() << " s for " << what << ", which never came";
  std::abort();  // the rest of the test would read what it waited for
}

// Waits on `cv` (with `lock` held) until `done()`.
template <typename Predicate>
void AwaitOrFail(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Predicate done,
                 const char* what) {
  if (!cv.wait_for(lock, kTestWaitBound, done)) FailWaitingFor(what);
}

// For an event with no condition variable to wait on (another thread's
// progress seen through a public accessor): looks every millisecond.
template <typename Predicate>
void PollOrFail(Predicate done, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kTestWaitBound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) FailWaitingFor(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace tutti

#endif  // TUTTI_TESTING_WAIT_H_
