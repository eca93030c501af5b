#include "tutti/replication/replication_policy.h"

#include "absl/strings/str_cat.h"

namespace tutti {

absl::StatusOr<ReplicationMode> ParseReplicationMode(absl::string_view name) {
  if (name == "none") return ReplicationMode::kNone;
  if (name == "nspb") return ReplicationMode::kNspb;
  if (name == "remus") return ReplicationMode::kRemus;
  if (name == "checkpoint") return ReplicationMode::kCheckpoint;
  return absl::InvalidArgumentError(absl::StrCat("unknown replication mode '", name,
                                                 "' (expected none, nspb, remus or checkpoint)"));
}

absl::string_view ReplicationModeName(ReplicationMode mode) { return replication::PolicyOf(mode).name; }

namespace replication {

const ModePolicy& PolicyOf(ReplicationMode mode) {
  // clang-format off
  //                                   name          keeps  logs   reads  ships  after  holds  checkpoints
  static constexpr ModePolicy kNone      {"none",       false, false, false, false, false, false, false};
  static constexpr ModePolicy kRemus     {"remus",      true,  false, false, true,  false, true,  false};
  static constexpr ModePolicy kNspb      {"nspb",       true,  true,  true,  true,  true,  false, false};
  static constexpr ModePolicy kCheckpoint{"checkpoint", true,  true,  false, false, false, false, true};
  // clang-format on
  switch (mode) {
    case ReplicationMode::kNone: return kNone;
    case ReplicationMode::kRemus: return kRemus;
    case ReplicationMode::kNspb: return kNspb;
    case ReplicationMode::kCheckpoint: return kCheckpoint;
  }
  return kNone;
}

}  // namespace replication
}  // namespace tutti
