#include "tutti/netdelay/link_delay.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace tutti {
namespace {

// Every packet is held at least delay − jitter and, unless the one ahead
// holds it back, at most delay + jitter; none overtakes another; the draws
// spread over the jitter range; the same seed gives the same times.
TEST(LinkDelayTest, HoldsEachPacketWithinItsJitterAndKeepsTheirOrder) {
  LinkDelay link(Micros(250), Micros(100), 7);
  LinkDelay again(Micros(250), Micros(100), 7);
  Time previous = 0;
  Duration low = kInfiniteFuture, high = 0;
  for (int i = 0; i < 10000; ++i) {
    const Time now = i * Micros(300);  // apart by more than the jitter's span: no packet waits for another
    const Time release = link.Release(now);
    EXPECT_EQ(release, again.Release(now));
    EXPECT_GE(release, previous);
    EXPECT_GE(release - now, Micros(150));
    EXPECT_LE(release - now, Micros(350));
    low = std::min(low, release - now);
    high = std::max(high, release - now);
    previous = release;
  }
  EXPECT_LT(low, Micros(160));
  EXPECT_GT(high, Micros(340));
}

TEST(LinkDelayTest, BackToBackPacketsLeaveInOrderAndAChangeAppliesToTheNext) {
  LinkDelay link(Millis(1), Micros(900), 3);
  Time previous = 0;
  for (int i = 0; i < 1000; ++i) {
    const Time release = link.Release(Millis(5));  // a burst: all at once
    EXPECT_GE(release, previous);
    EXPECT_GE(release, Millis(5) + Micros(100));
    previous = release;
  }
  link.Set(0, 0);
  EXPECT_EQ(link.Release(Millis(100)), Millis(100));
}

}  // namespace
}  // namespace tutti
