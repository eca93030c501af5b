// ParM encoder and decoder latency (ParM §6.2.5: encoding 93 / 153 / 193 µs
// and decoding 8 / 14 / 19 µs median for k = 2 / 3 / 4 on 224×224×3 images
// and 1000-class outputs). Tutti's codec on Fashion-MNIST (1×28×28, 10
// classes) and on the paper's sizes, for k = 2, 3, 4.
#include <benchmark/benchmark.h>

#include <vector>

#include "tutti/coding/parity_codec.h"

namespace tutti {
namespace {

void Encode(benchmark::State& state, ParityEncoder encoder, std::vector<int64_t> shape) {
  const int k = static_cast<int>(state.range(0));
  ParityCodec codec = *ParityCodec::Create(encoder, k, shape);
  std::vector<std::vector<float>> items(k, std::vector<float>(codec.item_elements(), 0.25f));
  std::vector<const float*> ptrs;
  for (auto& x : items) ptrs.push_back(x.data());
  std::vector<float> parity(codec.item_elements());
  for (auto _ : state) {
    codec.Encode(ptrs, parity.data());
    benchmark::DoNotOptimize(parity.data());
  }
}

void Decode(benchmark::State& state, int64_t classes) {
  const int k = static_cast<int>(state.range(0));
  std::vector<float> parity(classes, 1.0f), out(classes);
  std::vector<std::vector<float>> others(k - 1, std::vector<float>(classes, 0.5f));
  std::vector<const float*> ptrs;
  for (auto& o : others) ptrs.push_back(o.data());
  for (auto _ : state) {
    ParityCodec::Decode(parity, ptrs, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_EncodeSumFashionMnist(benchmark::State& s) { Encode(s, ParityEncoder::kSum, {1, 28, 28}); }
void BM_EncodeConcatFashionMnist(benchmark::State& s) { Encode(s, ParityEncoder::kConcat, {1, 28, 28}); }
void BM_EncodeSum224x224x3(benchmark::State& s) { Encode(s, ParityEncoder::kSum, {3, 224, 224}); }
void BM_EncodeConcat224x224x3(benchmark::State& s) { Encode(s, ParityEncoder::kConcat, {3, 224, 224}); }
void BM_Decode10Classes(benchmark::State& s) { Decode(s, 10); }
void BM_Decode1000Classes(benchmark::State& s) { Decode(s, 1000); }

BENCHMARK(BM_EncodeSumFashionMnist)->DenseRange(2, 4);
BENCHMARK(BM_EncodeConcatFashionMnist)->DenseRange(2, 4);
BENCHMARK(BM_EncodeSum224x224x3)->DenseRange(2, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeConcat224x224x3)->DenseRange(2, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decode10Classes)->DenseRange(2, 4);
BENCHMARK(BM_Decode1000Classes)->DenseRange(2, 4);

}  // namespace
}  // namespace tutti

BENCHMARK_MAIN();
