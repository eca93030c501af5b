// The JSON codec's part for typed models (codec/typed_tensors.h): their
// inputs read from a request body, their outputs written to an answer.
// Internal to the codec: kserve_json.h is the interface.
#ifndef TUTTI_CODEC_KSERVE_JSON_TENSORS_H_
#define TUTTI_CODEC_KSERVE_JSON_TENSORS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tutti/codec/infer_request.h"
#include "tutti/repository/model_config.h"

namespace tutti {

// NaN and ±Inf outputs are written as NaN, Infinity and -Infinity, as
// Triton does (triton-inference-server/server#3870); its clients and
// Python's json read them.
using KserveJsonWriter = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                           rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>;

// A tensor object's "name", "datatype" and "shape" ([batch, dims…])
// members, inside an object the caller opened and closes.
void WriteTensorHeader(KserveJsonWriter& w, const std::string& name, DataType type, int64_t batch,
                       absl::Span<const int64_t> dims);

// Reads a request's "inputs" array for a model that is not one FP32
// tensor: each input's elements from its (nested) "data", or its
// binary_data_size bytes of `binary` (the bytes after the JSON header, in
// input order; `has_header`: the request had an
// Inference-Header-Content-Length). Sets out->batch and out->data.
absl::Status ParseTypedJsonInputs(const rapidjson::Value& inputs, absl::string_view binary, bool has_header,
                                  const ModelConfig& config, InferRequest* out);

// Writes the output objects of an answer of `items` items (inside the
// "outputs" array): those `answer` asks for, in config order, as typed
// JSON data or, with `binary_output`, as binary_data_size bytes appended
// to `binary`.
void WriteTypedJsonOutputs(KserveJsonWriter& w, const ModelConfig& config, const AnswerLayout& answer,
                           const std::vector<std::vector<float>>& items, bool binary_output, std::string* binary);

}  // namespace tutti

#endif  // TUTTI_CODEC_KSERVE_JSON_TENSORS_H_
