#include "tutti/codec/kserve_json.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tutti/codec/kserve_json_tensors.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/user_text.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

using rapidjson::Value;

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

// Requests are JSON as RFC 8259 has it: no NaN or Infinity tokens. Answers
// (what Tutti's clients read) may carry them, as Triton writes them.
constexpr unsigned kParseRequestFlags = rapidjson::kParseDefaultFlags;
constexpr unsigned kParseResponseFlags = rapidjson::kParseNanAndInfFlag;

// RapidJSON's parser recurses once per level of nesting: a body nested
// 200,000 levels deep would exhaust the stack. Checked before parsing.
absl::Status CheckJsonDepth(absl::string_view json) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return Bad(absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels"));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

// Appends the numbers of a (possibly nested) array; false on a non-number.
bool Flatten(const Value& v, std::vector<float>* out) {
  if (v.IsNumber()) {
    out->push_back(static_cast<float>(v.GetDouble()));
    return true;
  }
  if (!v.IsArray()) return false;
  for (const Value& e : v.GetArray()) {
    if (!Flatten(e, out)) return false;
  }
  return true;
}

absl::Status ParseParameters(const Value& request, InferRequest* out) {
  if (!request.HasMember("parameters")) return absl::OkStatus();
  const Value& p = request["parameters"];
  if (!p.IsObject()) return Bad("'parameters' must be a JSON object");
  if (p.HasMember("latency_objective_ms")) {
    const Value& v = p["latency_objective_ms"];
    const double ms = v.IsNumber() ? v.GetDouble() : -1;
    if (absl::Status s = CheckObjective(ms); !s.ok()) return s;
    out->objective_ms = ms;
  }
  if (p.HasMember("timeout")) {
    const Value& v = p["timeout"];
    TUTTI_RETURN_IF_ERROR(CheckTimeout(v.IsInt64(), v.IsInt64() ? v.GetInt64() : -1));
    out->timeout_us = v.GetInt64();
  }
  if (p.HasMember("priority")) {
    const Value& v = p["priority"];
    TUTTI_RETURN_IF_ERROR(CheckPriority(v.IsUint64()));
    out->priority = v.GetUint64();
  }
  if (p.HasMember("accuracy")) {
    const Value& v = p["accuracy"];
    if (!v.IsNumber() || !(v.GetDouble() >= 0 && v.GetDouble() <= 1)) {
      return Bad("parameter 'accuracy' must be a number from 0 to 1");
    }
    out->min_accuracy = v.GetDouble();
  }
  if (p.HasMember("binary_data_output")) {
    if (!p["binary_data_output"].IsBool()) return Bad("parameter 'binary_data_output' must be true or false");
    out->binary_output = p["binary_data_output"].GetBool();
  }
  if (p.HasMember("sequence_id")) {
    const Value& v = p["sequence_id"];
    if (v.IsString()) {
      out->sequence.id = SequenceIdOfString(absl::string_view(v.GetString(), v.GetStringLength()));
    } else {
      const bool integer = v.IsInt64() || v.IsUint64();
      absl::StatusOr<uint64_t> id =
          SequenceIdOfInteger(v.IsInt64() ? v.GetInt64() : -1, !integer || (v.IsInt64() && v.GetInt64() < 0));
      if (!id.ok()) return id.status();
      out->sequence.id = *id;
    }
  }
  for (auto [name, flag] : {std::pair{"sequence_start", &out->sequence.start}, {"sequence_end", &out->sequence.end}}) {
    if (!p.HasMember(name)) continue;
    if (!p[name].IsBool()) return Bad(absl::StrCat("parameter '", name, "' must be true or false"));
    *flag = p[name].GetBool();
  }
  return absl::OkStatus();
}

// The optional "outputs" array: which of the model's outputs to answer
// with, perhaps asking for binary data.
absl::Status ParseRequestedOutputs(const Value& request, const ModelConfig& config, InferRequest* out) {
  if (!request.HasMember("outputs")) return absl::OkStatus();
  const Value& outputs = request["outputs"];
  if (!outputs.IsArray()) return Bad("'outputs' must be an array");
  for (const Value& o : outputs.GetArray()) {
    if (!o.IsObject() || !o.HasMember("name") || !o["name"].IsString()) {
      return Bad("each requested output needs a string 'name'");
    }
    if (absl::Status s = CheckOutputName(config, o["name"].GetString()); !s.ok()) return s;
    out->answer.outputs.push_back(o["name"].GetString());
    if (o.HasMember("parameters")) {
      const Value& p = o["parameters"];
      if (!p.IsObject()) return Bad("output 'parameters' must be a JSON object");
      if (p.HasMember("binary_data")) {
        if (!p["binary_data"].IsBool()) return Bad("output parameter 'binary_data' must be true or false");
        out->binary_output = p["binary_data"].GetBool();
      }
    }
  }
  return absl::OkStatus();
}

// A request body that must be one JSON object (of bounded depth).
absl::StatusOr<rapidjson::Document> ParseObject(absl::string_view body) {
  TUTTI_RETURN_IF_ERROR(CheckJsonDepth(body));
  rapidjson::Document doc;
  doc.Parse<kParseRequestFlags>(body.data(), body.size());
  if (doc.HasParseError()) {
    const size_t at = doc.GetErrorOffset();
    const bool non_finite = at < body.size() && (body.substr(at, 3) == "NaN" || body.substr(at, 8) == "Infinity" ||
                                                 body.substr(at, 9) == "-Infinity");
    return Bad(absl::StrCat("malformed JSON at offset ", at, ": ", rapidjson::GetParseError_En(doc.GetParseError()),
                            non_finite ? " (NaN and Infinity are not JSON: send non-finite values as binary data)"
                                       : ""));
  }
  if (!doc.IsObject()) return Bad("the request body must be a JSON object");
  return doc;
}

}  // namespace

absl::StatusOr<InferRequest> ParseInferRequest(absl::string_view body, const ModelConfig& config,
                                               std::optional<int64_t> json_length) {
  absl::string_view binary;
  if (json_length) {
    if (*json_length < 0 || *json_length > static_cast<int64_t>(body.size())) {
      return Bad(absl::StrCat("Inference-Header-Content-Length is ", *json_length, " but the body has ",
                              body.size(), " bytes"));
    }
    binary = body.substr(*json_length);
    body = body.substr(0, *json_length);
  }
  TUTTI_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body));
  InferRequest out;
  if (doc.HasMember("id")) {
    if (!doc["id"].IsString()) return Bad("'id' must be a string");
    out.id = doc["id"].GetString();
  }
  if (absl::Status s = ParseParameters(doc, &out); !s.ok()) return s;
  if (absl::Status s = ParseRequestedOutputs(doc, config, &out); !s.ok()) return s;
  if (!doc.HasMember("inputs") || !doc["inputs"].IsArray()) return Bad("missing 'inputs' array");
  if (!IsPlainFp32(config.inputs)) {
    TUTTI_RETURN_IF_ERROR(ParseTypedJsonInputs(doc["inputs"], binary, json_length.has_value(), config, &out));
    return out;
  }
  const TensorSpec& spec = config.inputs[0];
  const Value& inputs = doc["inputs"];
  if (absl::Status s = CheckInputCount(config, inputs.Size()); !s.ok()) return s;
  const Value& in = inputs[0];
  if (!in.IsObject() || !in.HasMember("name") || !in["name"].IsString()) {
    return Bad("each input needs a string 'name'");
  }
  if (!in.HasMember("datatype") || !in["datatype"].IsString()) return Bad("input needs a string 'datatype'");
  if (!in.HasMember("shape") || !in["shape"].IsArray()) return Bad("input needs a 'shape' array");
  std::vector<int64_t> shape;
  for (const Value& d : in["shape"].GetArray()) {
    if (!d.IsInt64()) {
      return Bad(absl::StrCat("input ", QuoteUserText(in["name"].GetString()),
                              ": shape dimensions must be positive integers"));
    }
    shape.push_back(d.GetInt64());
  }
  TUTTI_ASSIGN_OR_RETURN(out.batch, CheckInputTensor(config, in["name"].GetString(), in["datatype"].GetString(), shape));
  std::optional<int64_t> binary_size;
  if (in.HasMember("parameters")) {
    const Value& p = in["parameters"];
    if (!p.IsObject()) return Bad("input 'parameters' must be a JSON object");
    if (p.HasMember("binary_data_size")) {
      if (!p["binary_data_size"].IsInt64() || p["binary_data_size"].GetInt64() < 0) {
        return Bad("'binary_data_size' must be a non-negative integer");
      }
      binary_size = p["binary_data_size"].GetInt64();
    }
  }
  if (binary_size) {
    if (!json_length) {
      return Bad("input has 'binary_data_size' but the request has no Inference-Header-Content-Length header");
    }
    if (in.HasMember("data")) return Bad(absl::StrCat("input '", spec.name, "' has both 'data' and binary data"));
    if (*binary_size != static_cast<int64_t>(binary.size())) {
      return Bad(absl::StrCat("input '", spec.name, "' declares binary_data_size ", *binary_size, " but ",
                              binary.size(), " bytes follow the JSON header"));
    }
    if (absl::Status s = CheckByteCount(config, out.batch, *binary_size); !s.ok()) return s;
    out.data.resize(out.batch * spec.ElementCount());
    // Little-endian FP32, as the extension says (memcpy takes no null pointer, even for 0 bytes).
    if (!binary.empty()) std::memcpy(out.data.data(), binary.data(), binary.size());
    return out;
  }
  if (!binary.empty()) {
    return Bad(absl::StrCat(binary.size(), " bytes follow the JSON header but no input declares binary_data_size"));
  }
  if (!in.HasMember("data")) return Bad(absl::StrCat("input '", spec.name, "' has no 'data'"));
  out.data.reserve(out.batch * spec.ElementCount());
  if (!Flatten(in["data"], &out.data)) {
    return Bad(absl::StrCat("input '", spec.name, "' data must be numbers (FP32)"));
  }
  if (absl::Status s = CheckValueCount(config, out.batch, out.data.size()); !s.ok()) return s;
  return out;
}

namespace {

using Writer = KserveJsonWriter;

void WriteTensorSpec(Writer& w, const TensorSpec& t) {
  w.StartObject();
  WriteTensorHeader(w, t.name, t.datatype, -1, t.shape);  // -1: the batch dimension
  w.EndObject();
}

// The output object of a model of one FP32 output: its items' values as
// JSON data or, with `binary_output`, appended to `binary`.
void WritePlainOutput(Writer& w, const TensorSpec& out, const std::vector<std::vector<float>>& outputs,
                      bool binary_output, std::string* binary) {
  w.StartObject();
  WriteTensorHeader(w, out.name, DataType::kFp32, static_cast<int64_t>(outputs.size()), out.shape);
  if (binary_output) {
    for (const std::vector<float>& item : outputs) {
      binary->append(reinterpret_cast<const char*>(item.data()), item.size() * sizeof(float));
    }
    w.Key("parameters");
    w.StartObject();
    w.Key("binary_data_size");
    w.Uint64(binary->size());
    w.EndObject();
  } else {
    w.Key("data");
    w.StartArray();
    for (const std::vector<float>& item : outputs) {
      for (float v : item) w.Double(v);
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace

InferResponseBody WriteInferResponse(const ModelConfig& config, int64_t version, const std::string& id,
                                     const std::vector<std::vector<float>>& outputs,
                                     const std::string& parameters_json, bool binary_output,
                                     const AnswerLayout& answer) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("model_name");
  w.String(config.name.c_str());
  w.Key("model_version");
  w.String(std::to_string(version).c_str());
  if (!id.empty()) {
    const std::string valid = ValidUtf8(id);
    w.Key("id");
    w.String(valid.data(), static_cast<rapidjson::SizeType>(valid.size()));
  }
  w.Key("parameters");
  w.RawValue(parameters_json.c_str(), parameters_json.size(), rapidjson::kObjectType);
  w.Key("outputs");
  w.StartArray();
  std::string binary;
  if (IsPlainFp32(config.outputs)) {
    WritePlainOutput(w, config.outputs[0], outputs, binary_output, &binary);
  } else {
    WriteTypedJsonOutputs(w, config, answer, outputs, binary_output, &binary);
  }
  w.EndArray();
  w.EndObject();
  InferResponseBody response{buf.GetString(), std::nullopt};
  if (binary_output) {
    response.json_length = response.body.size();
    response.body += binary;
  }
  return response;
}

EncodedInferRequest WriteInferRequest(const std::string& name, const std::vector<int64_t>& shape,
                                      absl::Span<const float> data, const InferParameters& params, bool binary,
                                      double min_accuracy) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  if (params.objective_ms > 0 || params.priority > 0 || params.timeout_us > 0 || binary || min_accuracy >= 0) {
    w.Key("parameters");
    w.StartObject();
    if (params.objective_ms > 0) {
      w.Key("latency_objective_ms");
      w.Double(params.objective_ms);
    }
    if (params.priority > 0) {
      w.Key("priority");
      w.Uint64(params.priority);
    }
    if (params.timeout_us > 0) {
      w.Key("timeout");
      w.Int64(params.timeout_us);
    }
    if (min_accuracy >= 0) {
      w.Key("accuracy");
      w.Double(min_accuracy);
    }
    if (binary) {
      w.Key("binary_data_output");
      w.Bool(true);
    }
    w.EndObject();
  }
  w.Key("inputs");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  w.String(name.c_str());
  w.Key("datatype");
  w.String("FP32");
  w.Key("shape");
  w.StartArray();
  for (int64_t d : shape) w.Int64(d);
  w.EndArray();
  const size_t bytes = data.size() * sizeof(float);
  if (binary) {
    w.Key("parameters");
    w.StartObject();
    w.Key("binary_data_size");
    w.Uint64(bytes);
    w.EndObject();
  } else {
    w.Key("data");
    w.StartArray();
    for (float v : data) w.Double(v);
    w.EndArray();
  }
  w.EndObject();
  w.EndArray();
  w.EndObject();
  EncodedInferRequest out{buf.GetString(), std::nullopt};
  if (binary) {
    out.json_length = out.body.size();
    out.body.append(reinterpret_cast<const char*>(data.data()), bytes);
  }
  return out;
}

absl::StatusOr<InferResponse> ParseInferResponse(absl::string_view body, std::optional<size_t> json_length) {
  const size_t header = std::min(json_length.value_or(body.size()), body.size());
  TUTTI_RETURN_IF_ERROR(CheckJsonDepth(body.substr(0, header)));
  rapidjson::Document d;
  d.Parse<kParseResponseFlags>(body.data(), header);
  if (d.HasParseError() || !d.IsObject()) return Bad("the response is not a JSON object");
  InferResponse out;
  if (d.HasMember("model_name") && d["model_name"].IsString()) out.model_name = d["model_name"].GetString();
  if (d.HasMember("parameters") && d["parameters"].IsObject()) {
    const Value& p = d["parameters"];
    if (p.HasMember("tutti_emulated") && p["tutti_emulated"].IsBool()) out.emulated = p["tutti_emulated"].GetBool();
    if (p.HasMember("tutti_server_us") && p["tutti_server_us"].IsNumber()) {
      out.server_time = Micros(p["tutti_server_us"].GetDouble());
    }
  }
  if (!d.HasMember("outputs") || !d["outputs"].IsArray() || d["outputs"].Empty() || !d["outputs"][0].IsObject()) {
    return Bad("the response has no outputs");
  }
  const Value& o = d["outputs"][0];
  if (o.HasMember("data")) {
    if (!Flatten(o["data"], &out.output)) return Bad("output data must be numbers");
    return out;
  }
  const absl::string_view binary = body.substr(header);
  if (binary.size() % sizeof(float) != 0) return Bad("binary output is not a whole number of FP32 values");
  out.output.resize(binary.size() / sizeof(float));
  if (!binary.empty()) std::memcpy(out.output.data(), binary.data(), binary.size());  // no null pointers
  return out;
}

std::string WriteModelMetadata(const ModelConfig& config, const std::vector<int64_t>& versions) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("name");
  w.String(config.name.c_str());
  w.Key("versions");
  w.StartArray();
  for (int64_t v : versions) w.String(std::to_string(v).c_str());
  w.EndArray();
  w.Key("platform");
  const absl::string_view platform = KservePlatformName(config);
  w.String(platform.data(), static_cast<rapidjson::SizeType>(platform.size()));
  w.Key("inputs");
  w.StartArray();
  for (const TensorSpec& t : config.inputs) WriteTensorSpec(w, t);
  w.EndArray();
  w.Key("outputs");
  w.StartArray();
  for (const TensorSpec& t : config.outputs) WriteTensorSpec(w, t);
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

namespace {

// Triton's tensor fields: data_type ("TYPE_FP32") and dims (without the
// batch dimension), inside an object the caller opened and closes.
void WriteConfigTensorFields(Writer& w, DataType type, const std::vector<int64_t>& dims,
                             const std::vector<int64_t>& reshape = {}) {
  w.Key("data_type");
  w.String(ConfigDataTypeName(type).c_str());
  w.Key("dims");
  w.StartArray();
  for (int64_t d : dims) w.Int64(d);
  w.EndArray();
  if (reshape.empty()) return;
  w.Key("reshape");
  w.StartObject();
  w.Key("shape");
  w.StartArray();
  for (int64_t d : reshape) w.Int64(d);
  w.EndArray();
  w.EndObject();
}

void WriteStringMap(Writer& w, const std::map<std::string, std::string>& map) {
  w.StartObject();
  for (const auto& [k, v] : map) {
    w.Key(k.c_str());
    w.String(v.c_str());
  }
  w.EndObject();
}

}  // namespace

std::string WriteModelConfig(const ModelConfig& config) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("name");
  w.String(config.name.c_str());
  w.Key("platform");
  const absl::string_view platform = KservePlatformName(config);
  w.String(platform.data(), static_cast<rapidjson::SizeType>(platform.size()));
  w.Key("max_batch_size");
  w.Int(config.max_batch_size);
  for (const auto& [key, tensors] : {std::pair{"input", &config.inputs}, std::pair{"output", &config.outputs}}) {
    w.Key(key);
    w.StartArray();
    for (const TensorSpec& t : *tensors) {
      w.StartObject();
      w.Key("name");
      w.String(t.name.c_str());
      WriteConfigTensorFields(w, t.datatype, t.shape, t.reshape);
      if (tensors == &config.inputs) {
        w.Key("optional");
        w.Bool(t.optional);
      }
      w.EndObject();
    }
    w.EndArray();
  }
  if (!config.sequence_batching && config.steps.empty()) {  // Tutti batches every other model dynamically
    w.Key("dynamic_batching");
    w.StartObject();
    if (config.max_queue_delay_us) {
      w.Key("max_queue_delay_microseconds");
      w.Int64(*config.max_queue_delay_us);
    }
    if (config.priority_levels > 0) {
      w.Key("priority_levels");
      w.Int64(config.priority_levels);
      w.Key("default_priority_level");
      w.Int64(config.default_priority_level);
    }
    auto policy = [&w](const QueuePolicy& p) {
      w.StartObject();
      w.Key("timeout_action");
      w.String(p.delay ? "DELAY" : "REJECT");
      w.Key("default_timeout_microseconds");
      w.Int64(p.default_timeout_us);
      w.Key("allow_timeout_override");
      w.Bool(p.allow_timeout_override);
      w.Key("max_queue_size");
      w.Int64(p.max_queue_size);
      w.EndObject();
    };
    if (config.default_queue_policy) {
      w.Key("default_queue_policy");
      policy(*config.default_queue_policy);
    }
    if (!config.priority_queue_policy.empty()) {
      w.Key("priority_queue_policy");
      w.StartObject();
      for (const auto& [level, p] : config.priority_queue_policy) {
        w.Key(std::to_string(level).c_str());
        policy(p);
      }
      w.EndObject();
    }
    w.EndObject();
  }
  if (const std::optional<SequenceBatching>& sb = config.sequence_batching) {
    w.Key("sequence_batching");
    w.StartObject();
    w.Key("max_sequence_idle_microseconds");
    w.Int64(sb->max_sequence_idle_us);
    if (config.max_queue_delay_us) {  // sequences are batched together, as Triton's oldest strategy does
      w.Key("oldest");
      w.StartObject();
      w.Key("max_queue_delay_microseconds");
      w.Int64(*config.max_queue_delay_us);
      w.EndObject();
    }
    w.Key("state");
    w.StartArray();
    w.StartObject();
    w.Key("input_name");
    w.String(sb->state_input.c_str());
    w.Key("output_name");
    w.String(sb->state_output.c_str());
    WriteConfigTensorFields(w, DataType::kFp32, sb->state_shape);
    w.EndObject();
    w.EndArray();
    w.EndObject();
  }
  if (!config.steps.empty()) {
    w.Key("ensemble_scheduling");
    w.StartObject();
    w.Key("step");
    w.StartArray();
    for (const EnsembleStep& step : config.steps) {
      w.StartObject();
      w.Key("model_name");
      w.String(step.model_name.c_str());
      w.Key("model_version");
      w.Int64(step.model_version);
      w.Key("input_map");
      WriteStringMap(w, step.input_map);
      w.Key("output_map");
      WriteStringMap(w, step.output_map);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  // Tutti's fields, as Triton's free-form parameters ({key: {string_value}}).
  std::map<std::string, std::string> params;
  if (!config.task.empty()) params["task"] = config.task;
  if (!config.architecture.empty()) params["architecture"] = config.architecture;
  if (config.latency_objective_ms) params["latency_objective_ms"] = absl::StrCat(*config.latency_objective_ms);
  if (config.accuracy) params["accuracy"] = absl::StrCat(*config.accuracy);
  if (!config.profiles.empty()) {
    std::vector<std::string> kinds;
    for (const auto& [kind, profile] : config.profiles) kinds.push_back(kind);
    params["profiles"] = absl::StrJoin(kinds, ",");
  }
  if (config.parity) params["parity_of"] = config.parity->deployed;
  if (!config.merge.empty()) params["merge"] = config.merge;
  if (!config.model_state_shape.empty()) params["model_state_shape"] = absl::StrJoin(config.model_state_shape, ",");
  w.Key("parameters");
  w.StartObject();
  for (const auto& [k, v] : params) {
    w.Key(k.c_str());
    w.StartObject();
    w.Key("string_value");
    w.String(v.c_str());
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

std::string WriteServerMetadata() {
  return absl::StrCat(R"({"name":")", kServerName, R"(","version":")", kServerVersion, R"(","extensions":[")",
                      absl::StrJoin(kServerExtensions, R"(",")"), R"("]})");
}

std::string WriteRepositoryIndex(const std::vector<RepositoryIndexEntry>& models) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartArray();
  for (const RepositoryIndexEntry& m : models) {
    const std::string v = std::to_string(m.version);
    w.StartObject();
    w.Key("name");
    w.String(m.name.data(), static_cast<rapidjson::SizeType>(m.name.size()));
    w.Key("version");
    w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
    w.Key("state");
    w.String(m.state.data(), static_cast<rapidjson::SizeType>(m.state.size()));
    if (!m.reason.empty()) {
      w.Key("reason");
      w.String(m.reason.data(), static_cast<rapidjson::SizeType>(m.reason.size()));
    }
    w.EndObject();
  }
  w.EndArray();
  return buf.GetString();
}

namespace {

// An empty body, or a JSON object.
absl::StatusOr<rapidjson::Document> ParseOptionalObject(absl::string_view body) {
  if (body.find_first_not_of(" \t\r\n") != absl::string_view::npos) return ParseObject(body);
  rapidjson::Document doc;
  doc.SetObject();
  return doc;
}

}  // namespace

absl::StatusOr<bool> ParseRepositoryIndexRequest(absl::string_view body) {
  TUTTI_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseOptionalObject(body));
  if (!doc.HasMember("ready")) return false;
  if (!doc["ready"].IsBool()) return Bad("'ready' must be true or false");
  return doc["ready"].GetBool();
}

absl::Status RefuseRepositoryParameter(absl::string_view name) {
  if (name == "config" || absl::StartsWith(name, "file:")) {
    return Bad(absl::StrCat("parameter ", QuoteUserText(name),
                            ": Tutti loads a model only as the repository and serve config placed it at start; "
                            "change its config.yaml and restart the server to serve another configuration"));
  }
  return Bad(absl::StrCat("unknown parameter ", QuoteUserText(name), " (known: unload_dependents)"));
}

absl::StatusOr<RepositoryModelRequest> ParseRepositoryModelRequest(absl::string_view body) {
  TUTTI_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseOptionalObject(body));
  RepositoryModelRequest out;
  if (!doc.HasMember("parameters")) return out;
  const Value& params = doc["parameters"];
  if (!params.IsObject()) return Bad("'parameters' must be an object");
  for (auto it = params.MemberBegin(); it != params.MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    if (name == "unload_dependents") {
      if (!it->value.IsBool()) return Bad("'unload_dependents' must be true or false");
      out.unload_dependents = it->value.GetBool();
    } else {
      return RefuseRepositoryParameter(name);
    }
  }
  return out;
}

std::string WriteTaskVariants(absl::string_view task, const std::vector<TaskVariantEntry>& variants) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  const std::string t = ValidUtf8(task);
  w.Key("task");
  w.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
  w.Key("variants");
  w.StartArray();
  for (const TaskVariantEntry& v : variants) {
    w.StartObject();
    w.Key("name");
    w.String(v.name.data(), static_cast<rapidjson::SizeType>(v.name.size()));
    w.Key("accuracy");
    w.Double(v.accuracy);
    w.Key("latency_ms");
    w.Double(v.latency_ms);
    w.Key("state");
    w.String(v.state.data(), static_cast<rapidjson::SizeType>(v.state.size()));
    w.Key("utilisation");
    w.Double(v.utilisation);
    w.Key("peak_rps");
    w.Double(v.peak_rps);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

std::string WriteTaskParameters(absl::string_view task, bool meets, absl::string_view note) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  const std::string t = ValidUtf8(task);
  w.Key("tutti_task");
  w.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
  w.Key("tutti_meets_requirements");
  w.Bool(meets);
  if (!note.empty()) {
    const std::string n = ValidUtf8(note);
    w.Key("tutti_variant_note");
    w.String(n.data(), static_cast<rapidjson::SizeType>(n.size()));
  }
  w.EndObject();
  std::string members = buf.GetString();  // {…} → …,
  return members.substr(1, members.size() - 2) + ",";
}

std::string WriteError(absl::string_view message) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  const std::string valid = ValidUtf8(message);
  w.StartObject();
  w.Key("error");
  w.String(valid.data(), static_cast<rapidjson::SizeType>(valid.size()));
  w.EndObject();
  return buf.GetString();
}

}  // namespace tutti
