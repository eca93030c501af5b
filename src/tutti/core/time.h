// Time in Tutti: signed 64-bit integer nanoseconds everywhere.
//
// `Time` is an instant on some clock's timeline (the epoch depends on the
// clock: the real clock counts from an arbitrary steady origin, the manual and
// virtual clocks from 0). `Duration` is a difference of two instants. Both are
// plain integers so that scheduling arithmetic is exact and deterministic; the
// helpers below convert from and to human units at the edges only.
#ifndef TUTTI_CORE_TIME_H_
#define TUTTI_CORE_TIME_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace tutti {

using Time = int64_t;      // nanoseconds on a clock's timeline
using Duration = int64_t;  // nanoseconds

inline constexpr Duration kNanosecond = 1;
inline constexpr Duration kMicrosecond = 1000;
inline constexpr Duration kMillisecond = 1000 * kMicrosecond;
inline constexpr Duration kSecond = 1000 * kMillisecond;

// An instant later than any a clock will reach; used for "never".
inline constexpr Time kInfiniteFuture = std::numeric_limits<Time>::max();

// Converts fractional human units to integer nanoseconds, rounding to nearest.
constexpr Duration Micros(double us) { return static_cast<Duration>(std::llround(us * 1e3)); }
constexpr Duration Millis(double ms) { return static_cast<Duration>(std::llround(ms * 1e6)); }
constexpr Duration Seconds(double s) { return static_cast<Duration>(std::llround(s * 1e9)); }

constexpr double ToMicros(Duration d) { return static_cast<double>(d) / 1e3; }
constexpr double ToMillis(Duration d) { return static_cast<double>(d) / 1e6; }
constexpr double ToSeconds(Duration d) { return static_cast<double>(d) / 1e9; }

}  // namespace tutti

#endif  // TUTTI_CORE_TIME_H_
