#include "tutti/config/network_delays_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<NetworkDelays> ReadNetworkDelays(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  NetworkDelays delays;
  for (auto [key, out] : {std::pair<const char*, Duration*>{"ctrl", &delays.ctrl},
                          {"data_per_request", &delays.data_per_request},
                          {"resp", &delays.resp}}) {
    TUTTI_ASSIGN_OR_RETURN(auto us, r.OptionalScalar<double>(key, "a number of microseconds"));
    if (us && *us < 0) return Invalid(r.FieldPath(key), "must not be negative");
    *out = Micros(us.value_or(0));
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  return delays;
}

}  // namespace tutti
