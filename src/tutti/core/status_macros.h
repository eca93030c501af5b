// Early-return helpers for absl::Status / absl::StatusOr<T>.
#ifndef TUTTI_CORE_STATUS_MACROS_H_
#define TUTTI_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TUTTI_STATUS_CONCAT_INNER(a, b) a##b
#define TUTTI_STATUS_CONCAT(a, b) TUTTI_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function unless it is OK.
#define TUTTI_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    if (::absl::Status _st = (expr); !_st.ok()) return _st; \
  } while (0)

// `TUTTI_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from the StatusOr's
// value, or returns its error from the enclosing function.
#define TUTTI_ASSIGN_OR_RETURN(lhs, expr) \
  TUTTI_ASSIGN_OR_RETURN_IMPL(TUTTI_STATUS_CONCAT(_statusor_, __LINE__), lhs, expr)
#define TUTTI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = *std::move(tmp)

#endif  // TUTTI_CORE_STATUS_MACROS_H_
