// What the fuzz targets share: the model they parse requests for.
#ifndef TUTTI_FUZZ_FUZZ_UTIL_H_
#define TUTTI_FUZZ_FUZZ_UTIL_H_

#include "tutti/repository/model_config.h"

namespace tutti::fuzz {

// One FP32 input "image" [1, 2, 2], one output "logits" [3], max batch 4.
inline const ModelConfig& Model() {
  static const ModelConfig* config = [] {
    auto* c = new ModelConfig;
    c->name = "mlp";
    c->platform = Platform::kBuiltin;
    c->architecture = "mlp";
    c->max_batch_size = 4;
    c->inputs = {{"image", DataType::kFp32, {1, 2, 2}}};
    c->outputs = {{"logits", DataType::kFp32, {3}}};
    return c;
  }();
  return *config;
}

}  // namespace tutti::fuzz

#endif  // TUTTI_FUZZ_FUZZ_UTIL_H_
