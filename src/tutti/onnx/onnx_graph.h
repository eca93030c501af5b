// OnnxGraph: an ONNX model imported as operations on libtorch tensors, so
// that the torch executor batches, threads and profiles it as it does a
// TorchScript model (platform `onnx`, Triton's `onnxruntime_onnx`).
//
// Load() reads a ModelProto (opsets 1–17 of the default domain), turns its
// initializers into tensors and checks every node against the op table
// (onnx_ops.h): an op, an attribute value or a datatype the table does not
// cover is refused by name at load, never met at run time. Run() evaluates
// the nodes in the order the file lists them (ONNX requires a topological
// order).
//
// Thread-safety: Run() is const and may be called from several threads at
// once; the graph's tensors are read-only once loaded.
#ifndef TUTTI_ONNX_ONNX_GRAPH_H_
#define TUTTI_ONNX_ONNX_GRAPH_H_

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace tutti {

struct OnnxNode;  // onnx_ops.h

// A graph input or output as the file declares it.
struct OnnxValueInfo {
  std::string name;
  int elem_type = 0;           // onnx::TensorProto::DataType
  std::vector<int64_t> shape;  // -1: a symbolic or unknown dimension
};

class OnnxGraph {
 public:
  ~OnnxGraph();

  // InvalidArgument naming the file and the first refused op, attribute or
  // datatype (every refused op is named); DataLoss if the file is not a
  // ModelProto.
  static absl::StatusOr<std::unique_ptr<OnnxGraph>> LoadFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<OnnxGraph>> Load(const onnx::ModelProto& model);

  // The graph's inputs without an initializer, in declared order, and its
  // outputs.
  const std::vector<OnnxValueInfo>& inputs() const { return inputs_; }
  const std::vector<OnnxValueInfo>& outputs() const { return outputs_; }
  int opset() const { return opset_; }
  int64_t parameter_count() const;

  // Runs the graph on `inputs` (one per inputs(), in order); returns the
  // outputs in order. InvalidArgument when a count, datatype or rank
  // disagrees with the declaration; Internal naming the node when an
  // operation fails.
  absl::StatusOr<std::vector<at::Tensor>> Run(absl::Span<const at::Tensor> inputs) const;

 private:
  OnnxGraph() = default;

  // Every named value has a slot, resolved at load, so that a run indexes
  // a vector instead of looking names up.
  int opset_ = 0;
  int slots_ = 0;
  std::vector<OnnxValueInfo> inputs_, outputs_;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::pair<int, at::Tensor>> initializers_;  // slot, value
  std::vector<std::unique_ptr<OnnxNode>> nodes_;
};

// Each op the import covers, sorted.
std::vector<std::string> SupportedOnnxOps();

}  // namespace tutti

#endif  // TUTTI_ONNX_ONNX_GRAPH_H_
