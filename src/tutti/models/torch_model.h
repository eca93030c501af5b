// TorchModel: one model version loaded into libtorch on the CPU, ready to run
// batches. It hides libtorch behind a torch-free header so that callers (the
// CLI, the profiler, later the torch executor) compile without it.
//
// Loading: platform `torchscript` reads model.pt with torch::jit::load;
// platform `onnx` imports model.onnx (onnx/onnx_graph.h), whose one input
// and output must bear the config's names;
// platform `builtin` builds the named architecture and loads the weights Tutti
// saved. Every libtorch error (c10::Error, TorchScript exceptions) is caught
// here and returned as a Status naming the model or file.
//
// A batch is its items' records (repository/tensor_record.h): for a model of
// one FP32 input and output, its values laid out [batch, element…]
// contiguously; for any other, each item's tensors packed, which Run()
// unpacks into one libtorch tensor per input (a TorchScript forward(…) of
// that many arguments, returning a tensor or a tuple; an ONNX graph's
// inputs by name; a builtin TypedNet's ForwardTyped) and whose outputs it
// packs back. Stateful models have one FP32 input and output.
//
// Thread-safety: Run() may be called from several threads at once (inference
// only, no autograd). The number of intra-op threads is a process-wide
// libtorch setting: see SetTorchThreads().
#ifndef TUTTI_MODELS_TORCH_MODEL_H_
#define TUTTI_MODELS_TORCH_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tutti/repository/model_repository.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {

class TorchModel {
 public:
  virtual ~TorchModel() = default;

  // Loads `version`'s weights; a stateful model (sequence_batching) loads
  // as its StatelessForm, the state concatenated to its input and output. InvalidArgument if the config declares
  // BYTES for a model that is not TorchScript, or several or typed tensors
  // for a stateful model; DataLoss if the weights
  // file cannot be read as the declared platform; Internal if a trial batch
  // of one fails or returns a shape that disagrees with the config.
  static absl::StatusOr<std::unique_ptr<TorchModel>> Load(const ModelVersion& version);

  // Runs `batch` items. REQUIRES: 1 <= batch; input.size() == batch ×
  // input_elements(). On success `output` holds batch × output_elements()
  // values. Blocks for the duration of the computation.
  virtual absl::Status Run(absl::Span<const float> input, int batch,
                           std::vector<float>* output) = 0;

  // A compute-then-update model (ModelConfig::model_state_shape): computes
  // `batch` items' outputs with the weights `state` (empty: the loaded
  // ones), then one update step on the batch's labels, whose weights go to
  // `next_state`. Unimplemented for other models.
  virtual absl::Status RunAndUpdate(absl::Span<const float> input, int batch, absl::Span<const float> state,
                                    std::vector<float>* output, std::vector<float>* next_state);

  // A prefix group (Nexus §6.3; deployment/cluster_layout.h PrefixGroup):
  // builtin `members` of one architecture whose first `shared_stages`
  // stages are identical, run as one model with `config` (its input: the
  // member's index, its head, then the member's input). A batch runs the
  // shared stages once on all its items, then each head's own stages on its
  // rows; the shared stages' weights are held once. FailedPrecondition when
  // the members' loaded weights differ in those stages, or disagree with
  // the stage_hashes their configs record; the errors of Load otherwise.
  // Running a head that is no member's fails the batch.
  static absl::StatusOr<std::unique_ptr<TorchModel>> LoadPrefixGroup(
      const ModelConfig& config, const std::vector<const ModelVersion*>& members, int shared_stages);

  // The same network, its weights held once, under `bucket`: this model's
  // config at another shape bucket (ModelConfig AtBucket). Internal if a
  // trial batch of one fails.
  virtual absl::StatusOr<std::unique_ptr<TorchModel>> AtOtherBucket(const ModelConfig& bucket) const = 0;

  virtual const ModelConfig& config() const = 0;
  virtual int64_t parameter_count() const = 0;  // held in memory: shared ones once

  // Words of an item's record (repository/tensor_record.h): for a model of
  // one FP32 input and output, its values.
  int64_t input_elements() const { return RecordWords(config().inputs); }
  int64_t output_elements() const { return RecordWords(config().outputs); }
};

// Sets libtorch's intra-op thread count for the whole process (0: leave the
// default, one per core).
void SetTorchThreads(int threads);

// Process-wide: stateful architectures (gru_rows) sum their recurrent
// products in a random order (bits vary run to run, as with a GPU's atomic
// adds), so that replaying inputs does not reproduce a state (HAMS Figure
// 3). Off by default.
void SetInjectedNondeterminism(bool on);

}  // namespace tutti

#endif  // TUTTI_MODELS_TORCH_MODEL_H_
