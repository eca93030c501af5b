// A small command-line flag parser for `tutti <command> [flags]`.
//
// Flags are declared per command, bound to variables whose initial values are
// the defaults shown in --help. Accepted forms: --name value, --name=value,
// and bare --name for booleans. No globals: each command owns its FlagSet.
#ifndef TUTTI_CLI_FLAGS_H_
#define TUTTI_CLI_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tutti::cli {

class FlagSet {
 public:
  // `usage` is the one-line synopsis, `description` a paragraph for --help.
  FlagSet(std::string usage, std::string description);

  void String(const std::string& name, std::string* value, const std::string& help);
  void Int(const std::string& name, int* value, const std::string& help);
  void Int64(const std::string& name, int64_t* value, const std::string& help);
  void Double(const std::string& name, double* value, const std::string& help);
  void Bool(const std::string& name, bool* value, const std::string& help);

  // Parses `args`. InvalidArgument names an unknown flag, a missing value, a
  // malformed number or a stray positional argument. --help / -h sets
  // help_requested() and stops parsing.
  absl::Status Parse(const std::vector<std::string>& args);

  // InvalidArgument unless every named flag was given on the command line.
  absl::Status Require(const std::vector<std::string>& names) const;

  bool help_requested() const { return help_requested_; }
  bool WasSet(absl::string_view name) const;
  std::string Help() const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    std::function<bool(const std::string&)> set;  // false if the text is malformed
    bool was_set = false;
  };
  Flag* Find(absl::string_view name);
  void Add(Flag flag);

  std::string usage_;
  std::string description_;
  std::vector<Flag> flags_;
  bool help_requested_ = false;
};

}  // namespace tutti::cli

#endif  // TUTTI_CLI_FLAGS_H_
