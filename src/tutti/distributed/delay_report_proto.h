// The wire form of a DelayReport (serving/inference_engine.h), both ways:
// the leading scheduler sends its report to the frontends, which show it.
#ifndef TUTTI_DISTRIBUTED_DELAY_REPORT_PROTO_H_
#define TUTTI_DISTRIBUTED_DELAY_REPORT_PROTO_H_

#include "tutti/proto/tutti_internal.pb.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

void ToProto(const DelayReport& report, internal::DelayReport* out);
DelayReport FromProto(const internal::DelayReport& report);

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_DELAY_REPORT_PROTO_H_
