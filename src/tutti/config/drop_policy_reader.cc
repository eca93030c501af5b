#include "tutti/config/drop_policy_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<std::optional<DropPolicy>> ReadDropPolicy(MapReader& r) {
  TUTTI_ASSIGN_OR_RETURN(std::optional<std::string> drop, r.OptionalScalar<std::string>("drop", "lazy or early"));
  if (!drop) return std::optional<DropPolicy>();
  if (*drop == "lazy") return std::optional<DropPolicy>(DropPolicy::kLazy);
  if (*drop == "early") return std::optional<DropPolicy>(DropPolicy::kEarly);
  return Invalid(r.FieldPath("drop"), "expected lazy or early");
}

}  // namespace tutti
