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

// A model of typed tensors with variable dimensions, padded to buckets of
// 4 and 8, and an optional BYTES input: its requests take the typed path,
// the padding, the BYTES slots and the cut.
inline const ModelConfig& TypedModel() {
  static const ModelConfig* config = [] {
    auto* c = new ModelConfig;
    c->name = "text";
    c->max_batch_size = 4;
    c->platform = Platform::kTorchScript;
    c->inputs = {{"ids", DataType::kInt64, {-1}}, {"mask", DataType::kBool, {2, -1}}, {"x", DataType::kFp16, {3}},
                 {"s", DataType::kBytes, {2}}};
    c->inputs[3].optional = true;
    c->inputs[3].max_element_bytes = 8;
    c->outputs = {{"echo", DataType::kInt64, {-1}}, {"y", DataType::kFp32, {1}}, {"t", DataType::kBytes, {-1}}};
    c->shape_buckets = {4, 8};
    return c;
  }();
  return *config;
}

}  // namespace tutti::fuzz

#endif  // TUTTI_FUZZ_FUZZ_UTIL_H_
