// Helpers shared by the `tutti` subcommands.
#ifndef TUTTI_CLI_COMMAND_UTIL_H_
#define TUTTI_CLI_COMMAND_UTIL_H_

#include <sys/resource.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
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

}  // namespace tutti::cli

#endif  // TUTTI_CLI_COMMAND_UTIL_H_
