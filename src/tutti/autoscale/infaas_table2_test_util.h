// INFaaS Table 2's three variants of one model, as the autoscale tests
// scale them: A on CPUs (200 ms, 5 r/s, cost 1), B on Inferentia (20 ms,
// 100 r/s, cost 3), C on a V100 (15 ms, 800 r/s, cost 16); slots 0–3 A's,
// 4–7 B's, 8–11 C's; loading takes 2 s.
#ifndef TUTTI_AUTOSCALE_INFAAS_TABLE2_TEST_UTIL_H_
#define TUTTI_AUTOSCALE_INFAAS_TABLE2_TEST_UTIL_H_

#include <vector>

#include "tutti/autoscale/task_autoscaler.h"

namespace tutti::testing {

inline std::vector<TaskVariant> InfaasTable2() {
  return {
      {"A", "cpu", 0.9, 200 * kMillisecond, 5, 1, 2 * kSecond, 0, 4},
      {"B", "inf1", 0.9, 20 * kMillisecond, 100, 3, 2 * kSecond, 4, 4},
      {"C", "v100", 0.9, 15 * kMillisecond, 800, 16, 2 * kSecond, 8, 4},
  };
}

}  // namespace tutti::testing

#endif  // TUTTI_AUTOSCALE_INFAAS_TABLE2_TEST_UTIL_H_
