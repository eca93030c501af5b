// An inference request as the frontends hand it to the serving core, and
// what both KServe v2 codecs (JSON over HTTP, protobuf over gRPC) share: the
// checks they run against the model's config, so that the two protocols
// accept and refuse exactly the same requests with the same messages, and
// the metadata they report.
//
// A request's input shapes include the batch dimension: [N, dims…],
// 1 <= N <= max_batch_size. The checks below are those of a model of one
// FP32 input; codec/typed_tensors.h has those of any other.
#ifndef TUTTI_CODEC_INFER_REQUEST_H_
#define TUTTI_CODEC_INFER_REQUEST_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/core/cancel_flag.h"
#include "tutti/core/ids.h"
#include "tutti/repository/model_config.h"
#include "tutti/tracing/trace_context.h"

namespace tutti {

// What an answer carries: the outputs asked for (empty: all) and, for a
// model of variable dimensions, the request's length and the size of the
// shape bucket it ran at (its variable outputs are cut from that to this).
struct AnswerLayout {
  std::vector<std::string> outputs;
  int64_t length = 0;
  int64_t bucket_size = 0;
};

struct InferRequest {
  std::string id;               // echoed in the response
  int batch = 0;                // N
  std::vector<float> data;      // N records of the model's inputs (repository/tensor_record.h)
  AnswerLayout answer;
  int bucket = -1;              // a model of variable dimensions: the index of its shape bucket
  double objective_ms = 0;      // 0: the model's default
  bool binary_output = false;   // answer with binary output data (HTTP only)
  SequenceRef sequence;         // sequence_id, sequence_start, sequence_end (Triton's)
  double min_accuracy = 0;      // the "accuracy" parameter, 0..1: what a model-less request needs
  // Triton's "timeout" parameter, in microseconds: a request not yet in a
  // batch this long after it arrived is withdrawn (answered Cancelled).
  // 0: none.
  int64_t timeout_us = 0;
  // Triton's "priority" parameter: 1 is the highest of the model's
  // priority_levels; 0, or a level the model lacks, its default.
  uint64_t priority = 0;
  // Set by the transport when its client goes away or cancels the call
  // (CancelFlag); null where it cannot tell.
  std::shared_ptr<CancelFlag> cancel;
  // The caller's span, from its W3C `traceparent` header (HTTP) or
  // metadata (gRPC); nullopt when absent or malformed.
  std::optional<TraceContext> traceparent;
};
// The "timeout" parameter: microseconds, an integer from 0 (none) to a day.
absl::Status CheckTimeout(bool integer, int64_t timeout_us);
// The "priority" parameter: a non-negative integer.
absl::Status CheckPriority(bool integer);
// The scheduler's level (Request::level, 0 first) of a request of `config`
// sent with `priority`: as Triton, 0 and levels the model lacks mean its
// default_priority_level.
int PriorityLevel(const ModelConfig& config, uint64_t priority);

// The `sequence_id` parameter (Triton's convention): an unsigned integer
// below 2^63 or a string; 0 and "" mean none. A string maps to an id with
// the top bit set (a hash of it), so string and integer ids never meet.
absl::StatusOr<uint64_t> SequenceIdOfInteger(int64_t value, bool negative);
uint64_t SequenceIdOfString(absl::string_view value);
// A request of a sequence carries one item.
absl::Status CheckSequenceBatch(const InferRequest& request);

// Each returns InvalidArgument with a message naming the problem.

// The number of inputs, then the input's name, datatype and shape; returns N.
absl::Status CheckInputCount(const ModelConfig& config, size_t count);
absl::StatusOr<int> CheckInputTensor(const ModelConfig& config, absl::string_view name, absl::string_view datatype,
                                     const std::vector<int64_t>& shape);
// The datatype and shape of an input of `config` whose name is `spec`'s
// (a -1 dimension of the spec takes any positive size); returns N.
absl::StatusOr<int> CheckTensorShape(const ModelConfig& config, const TensorSpec& spec, absl::string_view datatype,
                                     const std::vector<int64_t>& shape);
// `values` FP32 values (or `bytes` of raw data) for a batch of `batch`.
absl::Status CheckValueCount(const ModelConfig& config, int batch, int64_t values);
absl::Status CheckByteCount(const ModelConfig& config, int batch, int64_t bytes);
// A requested output is one of the model's.
absl::Status CheckOutputName(const ModelConfig& config, absl::string_view name);
// The "latency_objective_ms" parameter: a number of milliseconds in
// [kMinObjectiveMs, kMaxObjectiveMs] (a smaller one would round to no time
// at all, a larger one overflow the deadline).
inline constexpr double kMinObjectiveMs = 0.001;
inline constexpr double kMaxObjectiveMs = 86'400'000;
absl::Status CheckObjective(double objective_ms);

// Metadata both protocols report.
inline constexpr absl::string_view kServerName = "tutti";
inline constexpr absl::string_view kServerVersion = "0.1.0";
// The protocol extensions both report, by Triton's names.
inline constexpr absl::string_view kServerExtensions[] = {"binary_tensor_data", "sequence", "model_repository",
                                                          "model_configuration", "statistics"};
// "pytorch_torchscript", "onnxruntime_onnx", "ensemble", "tutti_emulated" or
// "tutti_builtin".
absl::string_view KservePlatformName(const ModelConfig& config);
// A tensor's data_type in Triton's model configuration: "TYPE_FP32", …;
// BYTES is "TYPE_STRING".
std::string ConfigDataTypeName(DataType type);

}  // namespace tutti

#endif  // TUTTI_CODEC_INFER_REQUEST_H_
