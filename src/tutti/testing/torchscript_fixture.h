// The TorchScript fixture made by tools/make_torchscript_fixture.py: a
// repository with one linear model (784 → 10), its inputs and the outputs
// PyTorch computed for them.
#ifndef TUTTI_TESTING_TORCHSCRIPT_FIXTURE_H_
#define TUTTI_TESTING_TORCHSCRIPT_FIXTURE_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tutti/testing/source_dir.h"

namespace tutti::testing {

inline std::string FixtureRepo() { return SourceDir() + "/testdata/torchscript_repo"; }
// The same model exported to ONNX (tools/export_onnx.py fixture).
inline std::string OnnxFixtureRepo() { return SourceDir() + "/testdata/onnx_repo"; }

// Item i, element j = ((7i + j) mod 256) / 255, as the script builds them.
inline std::vector<float> FixtureInputs(int batch) {
  std::vector<float> x(batch * 784);
  for (int i = 0; i < batch; ++i) {
    for (int j = 0; j < 784; ++j) x[i * 784 + j] = static_cast<float>((7 * i + j) % 256) / 255.0f;
  }
  return x;
}

// PyTorch's outputs for FixtureInputs(2): 2 × 10 values.
inline std::vector<float> FixtureExpectedOutputs() {
  std::ifstream in(FixtureRepo() + "/expected_outputs.txt");
  std::string line;
  std::vector<float> out;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    for (float v; row >> v;) out.push_back(v);
  }
  return out;
}

// The fixture's config as a model-less task's only model (task "toy",
// accuracy 0.9), given a slow cpu profile — 200 ms at batch 1, 400 ms at 8:
// 20 queries/s per instance within a 1 s objective — so that a few clients
// need more than one instance.
inline std::string ModelLessLinearConfig() {
  return R"(name: linear
platform: torchscript
task: toy
accuracy: 0.9
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [200000, 400000]}}
)";
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_TORCHSCRIPT_FIXTURE_H_
