// Helpers shared by the `tutti` subcommands.
#ifndef TUTTI_CLI_COMMAND_UTIL_H_
#define TUTTI_CLI_COMMAND_UTIL_H_

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "tutti/core/outcome_counts.h"
#include "tutti/cli/commands.h"
#include "tutti/cli/flags.h"

namespace tutti::cli {

// Parses flags; returns -1 to go on, else the exit code to return (help
// printed: 0, usage error: 2).
inline int ParseOrExit(FlagSet& flags, const Args& args, const std::vector<std::string>& required = {}) {
  absl::Status s = flags.Parse(args);
  if (s.ok() && flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (s.ok()) s = flags.Require(required);
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n\n" << flags.Help();
    return 2;
  }
  return -1;
}

// A KServe v2 request with one Fashion-MNIST test image, which `tutti demo`
// writes at the root of its repository and `tutti serve` offers in a curl.
inline constexpr char kExampleRequestFile[] = "example_request.json";
// Where `tutti demo` builds its model repository.
inline constexpr char kDefaultRepo[] = "demo_repository";

// Raises the soft limit on open files to the hard one: a server holds one
// descriptor per connection (the default soft limit is often 1,024).
inline void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Prints the error and returns exit code 1.
inline int Fail(const absl::Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  return 1;
}

// What each model's requests came to, as a server stops: the busiest
// `rows` models that had requests, one line each, then the rest summed, so
// that thousands of models stay readable.
inline void PrintFinalCounts(const std::vector<std::string>& names, const std::vector<OutcomeCounts>& counts,
                             std::ostream& out, size_t rows = 20) {
  std::vector<size_t> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return counts[a].ended() > counts[b].ended(); });
  OutcomeCounts rest;
  size_t others = 0, idle = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const OutcomeCounts& c = counts[order[i]];
    if (c.ended() == 0) {
      ++idle;
    } else if (i < rows) {
      out << absl::StrFormat("  %-14s success %d, late %d, dropped %d, error %d\n", names[order[i]], c.good, c.late,
                             c.dropped, c.error);
    } else {
      rest += c;
      ++others;
    }
  }
  if (others > 0) {
    out << absl::StrFormat("  %d more models: success %d, late %d, dropped %d, error %d\n", others, rest.good,
                           rest.late, rest.dropped, rest.error);
  }
  if (idle > 0) out << absl::StrFormat("  %d models had no requests\n", idle);
}

}  // namespace tutti::cli

#endif  // TUTTI_CLI_COMMAND_UTIL_H_
