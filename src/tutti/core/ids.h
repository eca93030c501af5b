// The ids that requests, models and GPUs are known by across the data plane
// (scheduler, executors, codecs, replication), and a request's place in a
// sequence: the vocabulary below every layer that names them.
#ifndef TUTTI_CORE_IDS_H_
#define TUTTI_CORE_IDS_H_

#include <cstdint>

namespace tutti {

using RequestId = uint64_t;
using ModelId = int32_t;  // index into ClusterSpec::models
using GpuId = int32_t;    // 0 … ClusterSpec::num_gpus() − 1

// A request's place in a sequence of a stateful model (Triton's sequence
// batcher; model_config.h SequenceBatching): `id` 0 means none. The state
// a sequence carries from request to request is kept beside the executor
// that runs the model (replication/replicated_executor.h).
struct SequenceRef {
  uint64_t id = 0;
  bool start = false;  // the state starts from zeros
  bool end = false;    // the state is forgotten after this request
};

}  // namespace tutti

#endif  // TUTTI_CORE_IDS_H_
