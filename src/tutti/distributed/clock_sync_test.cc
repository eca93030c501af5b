#include "tutti/distributed/clock_sync.h"

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(ClockSyncTest, TheShortestRoundTripGivesTheOffset) {
  ClockSync sync(8);
  EXPECT_FALSE(sync.synced());
  // The leader's clock is 5 s ahead. A slow exchange: 1 ms out, 3 ms back.
  sync.Add(Millis(100), Seconds(5) + Millis(101), Seconds(5) + Millis(101), Millis(104));
  EXPECT_TRUE(sync.synced());
  EXPECT_EQ(sync.offset(), Seconds(5) - Millis(1));
  EXPECT_EQ(sync.uncertainty(), Millis(2));
  // A quick symmetric one: 50 µs each way, 10 µs in the leader.
  sync.Add(Millis(200), Seconds(5) + Millis(200) + Micros(50), Seconds(5) + Millis(200) + Micros(60),
           Millis(200) + Micros(110));
  EXPECT_EQ(sync.offset(), Seconds(5));
  EXPECT_EQ(sync.uncertainty(), Micros(50));
  EXPECT_EQ(sync.ToCluster(Millis(300)), Seconds(5) + Millis(300));
  EXPECT_EQ(sync.ToLocal(Seconds(5) + Millis(300)), Millis(300));
}

TEST(ClockSyncTest, OldExchangesAreForgotten) {
  ClockSync sync(2);
  sync.Add(0, 1000, 1000, 0);               // round trip 0: offset 1000
  sync.Add(10, 2010, 2010, 20);             // offset 1995, round trip 10
  sync.Add(30, 2035, 2035, 40);             // offset 2000, round trip 10
  EXPECT_EQ(sync.offset(), 1995);           // the first is gone; the earlier of equal round trips wins
  sync.Reset();
  EXPECT_FALSE(sync.synced());
}

}  // namespace
}  // namespace tutti
