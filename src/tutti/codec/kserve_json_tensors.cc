#include "tutti/codec/kserve_json_tensors.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "tutti/codec/typed_tensors.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/user_text.h"

namespace tutti {
namespace {

using rapidjson::Value;

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

// Appends the elements of a (possibly nested) array of numbers or booleans.
absl::Status AppendJson(const Value& v, int input, const std::string& name, TypedInputs* inputs) {
  if (v.IsArray()) {
    for (const Value& e : v.GetArray()) TUTTI_RETURN_IF_ERROR(AppendJson(e, input, name, inputs));
    return absl::OkStatus();
  }
  WireScalar s;
  if (v.IsBool()) {
    s.kind = WireScalar::kBool, s.b = v.GetBool();
  } else if (v.IsInt64()) {
    s.kind = WireScalar::kInt, s.i = v.GetInt64();
  } else if (v.IsUint64()) {
    s.kind = WireScalar::kUint, s.u = v.GetUint64();
  } else if (v.IsNumber()) {
    s.kind = WireScalar::kDouble, s.d = v.GetDouble();
  } else if (v.IsString()) {
    s.kind = WireScalar::kBytes, s.s = absl::string_view(v.GetString(), v.GetStringLength());
  } else {
    return Bad(absl::StrCat("input '", name, "' data must be numbers, booleans or strings"));
  }
  return inputs->Append(input, s);
}

void WriteElement(KserveJsonWriter& w, const WireScalar& v) {
  switch (v.kind) {
    case WireScalar::kBool: w.Bool(v.b); break;
    case WireScalar::kInt: w.Int64(v.i); break;
    case WireScalar::kUint: w.Uint64(v.u); break;
    case WireScalar::kDouble: w.Double(v.d); break;
    case WireScalar::kBytes: w.String(v.s.data(), static_cast<rapidjson::SizeType>(v.s.size())); break;
  }
}

}  // namespace

void WriteTensorHeader(KserveJsonWriter& w, const std::string& name, DataType type, int64_t batch,
                       absl::Span<const int64_t> dims) {
  w.Key("name");
  w.String(name.c_str());
  w.Key("datatype");
  const absl::string_view datatype = DataTypeName(type);
  w.String(datatype.data(), static_cast<rapidjson::SizeType>(datatype.size()));
  w.Key("shape");
  w.StartArray();
  w.Int64(batch);
  for (int64_t d : dims) w.Int64(d);
  w.EndArray();
}

absl::Status ParseTypedJsonInputs(const Value& inputs, absl::string_view binary, bool has_header,
                                  const ModelConfig& config, InferRequest* out) {
  TypedInputs typed(config);
  size_t offset = 0;  // into `binary`
  for (const Value& in : inputs.GetArray()) {
    if (!in.IsObject() || !in.HasMember("name") || !in["name"].IsString()) {
      return Bad("each input needs a string 'name'");
    }
    const std::string name = in["name"].GetString();
    if (!in.HasMember("datatype") || !in["datatype"].IsString()) {
      return Bad(absl::StrCat("input ", QuoteUserText(name), " needs a string 'datatype'"));
    }
    if (!in.HasMember("shape") || !in["shape"].IsArray()) {
      return Bad(absl::StrCat("input ", QuoteUserText(name), " needs a 'shape' array"));
    }
    std::vector<int64_t> shape;
    for (const Value& d : in["shape"].GetArray()) {
      if (!d.IsInt64()) {
        return Bad(absl::StrCat("input ", QuoteUserText(name), ": shape dimensions must be positive integers"));
      }
      shape.push_back(d.GetInt64());
    }
    TUTTI_ASSIGN_OR_RETURN(const int index, typed.Add(name, in["datatype"].GetString(), shape));
    if (in.HasMember("parameters")) {
      const Value& p = in["parameters"];
      if (!p.IsObject()) return Bad(absl::StrCat("input '", name, "' 'parameters' must be a JSON object"));
      if (p.HasMember("binary_data_size")) {
        if (!p["binary_data_size"].IsInt64() || p["binary_data_size"].GetInt64() < 0) {
          return Bad("'binary_data_size' must be a non-negative integer");
        }
        if (!has_header) {
          return Bad(absl::StrCat("input '", name, "' has 'binary_data_size' but the request has no "
                                  "Inference-Header-Content-Length header"));
        }
        if (in.HasMember("data")) return Bad(absl::StrCat("input '", name, "' has both 'data' and binary data"));
        const uint64_t size = static_cast<uint64_t>(p["binary_data_size"].GetInt64());
        if (size > binary.size() - offset) {
          return Bad(absl::StrCat("input '", name, "' declares binary_data_size ", size, " but only ",
                                  binary.size() - offset, " bytes of binary data are left"));
        }
        TUTTI_RETURN_IF_ERROR(typed.SetRaw(index, binary.substr(offset, size)));
        offset += size;
        continue;
      }
    }
    if (!in.HasMember("data")) return Bad(absl::StrCat("input '", name, "' has no 'data'"));
    TUTTI_RETURN_IF_ERROR(AppendJson(in["data"], index, name, &typed));
  }
  if (offset != binary.size()) {
    return Bad(absl::StrCat(binary.size() - offset, " bytes follow the JSON header beyond the inputs' "
                            "binary_data_size"));
  }
  return typed.Finish(out);
}

void WriteTypedJsonOutputs(KserveJsonWriter& w, const ModelConfig& config, const AnswerLayout& answer,
                           const std::vector<std::vector<float>>& items, bool binary_output, std::string* binary) {
  for (const OutputTensor& t : TypedOutputs(config, items, answer)) {
    const TensorSpec& spec = *t.spec;
    w.StartObject();
    WriteTensorHeader(w, spec.name, spec.datatype, t.shape[0], absl::MakeConstSpan(t.shape).subspan(1));
    const std::string& bytes = t.bytes;
    if (binary_output) {
      binary->append(bytes);
      w.Key("parameters");
      w.StartObject();
      w.Key("binary_data_size");
      w.Uint64(bytes.size());
      w.EndObject();
    } else {
      w.Key("data");
      w.StartArray();
      if (spec.datatype == DataType::kBytes) {
        // Well formed: TypedOutputs wrote it.
        const absl::StatusOr<std::vector<absl::string_view>> elements = SplitBytesElements(bytes, spec.name);
        for (size_t i = 0; elements.ok() && i < elements->size(); ++i) {
          WriteElement(w, WireScalar{.kind = WireScalar::kBytes, .s = (*elements)[i]});
        }
      } else {
        const int64_t n = static_cast<int64_t>(bytes.size() / DataTypeSize(spec.datatype));
        for (int64_t i = 0; i < n; ++i) WriteElement(w, ElementAt(spec.datatype, bytes, i));
      }
      w.EndArray();
    }
    w.EndObject();
  }
}

}  // namespace tutti
