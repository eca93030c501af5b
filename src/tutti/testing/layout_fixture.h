// Test support for laying out clusters: a repository with a real-weights
// model "mlp" (cpu profile; its weights a placeholder, never loaded) and an
// emulated "resnet50" (a100 profile, Triton's max_queue_delay 250 µs).
#ifndef TUTTI_TESTING_LAYOUT_FIXTURE_H_
#define TUTTI_TESTING_LAYOUT_FIXTURE_H_

#include "tutti/testing/temp_dir.h"

namespace tutti::testing {

inline void WriteMlpAndResnet50(TempDir& dir) {
  dir.WriteFile("mlp/1/config.yaml", R"(name: mlp
platform: builtin
architecture: mlp
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [100, 300]}}
)");
  dir.WriteFile("mlp/1/model.pt", "weights");
  dir.WriteFile("resnet50/1/config.yaml", R"(name: resnet50
platform: emulated
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: logits, datatype: FP32, shape: [2]}]
dynamic_batching: {max_queue_delay_microseconds: 250}
profiles: {a100: {batch: [1, 8], latency_us: [1000, 3000]}}
)");
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_LAYOUT_FIXTURE_H_
