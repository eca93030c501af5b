#include "tutti/cli/flags.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tutti::cli {

FlagSet::FlagSet(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {}

void FlagSet::Add(Flag flag) { flags_.push_back(std::move(flag)); }

void FlagSet::String(const std::string& name, std::string* value, const std::string& help) {
  Add({name, help, value->empty() ? "" : *value, false, [value](const std::string& s) {
         *value = s;
         return true;
       }});
}

void FlagSet::Int(const std::string& name, int* value, const std::string& help) {
  Add({name, help, std::to_string(*value), false,
       [value](const std::string& s) { return absl::SimpleAtoi(s, value); }});
}

void FlagSet::Int64(const std::string& name, int64_t* value, const std::string& help) {
  Add({name, help, std::to_string(*value), false,
       [value](const std::string& s) { return absl::SimpleAtoi(s, value); }});
}

void FlagSet::Double(const std::string& name, double* value, const std::string& help) {
  Add({name, help, absl::StrCat(*value), false,
       [value](const std::string& s) { return absl::SimpleAtod(s, value); }});
}

void FlagSet::Bool(const std::string& name, bool* value, const std::string& help) {
  Add({name, help, *value ? "true" : "", true, [value](const std::string& s) {
         if (s == "true" || s == "1") return *value = true, true;
         if (s == "false" || s == "0") return *value = false, true;
         return false;
       }});
}

FlagSet::Flag* FlagSet::Find(absl::string_view name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FlagSet::WasSet(absl::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.was_set;
  }
  return false;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = Find(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!has_value) {
      if (flag->is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    if (!flag->set(value)) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, ": bad value '", value, "'"));
    }
    flag->was_set = true;
  }
  return absl::OkStatus();
}

absl::Status FlagSet::Require(const std::vector<std::string>& names) const {
  for (const std::string& n : names) {
    if (!WasSet(n)) return absl::InvalidArgumentError(absl::StrCat("missing required flag --", n));
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  std::string out = absl::StrCat("usage: ", usage_, "\n\n", description_, "\n\nflags:\n");
  for (const Flag& f : flags_) {
    std::string left = absl::StrCat("  --", f.name, f.is_bool ? "" : " VALUE");
    absl::StrAppendFormat(&out, "%-26s %s", left, f.help);
    // A help text that explains its default itself is not told it twice.
    if (!f.default_text.empty() && !absl::StrContains(f.help, "(default")) {
      absl::StrAppend(&out, " (default: ", f.default_text, ")");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppendFormat(&out, "%-26s %s\n", "  --help", "show this help");
  return out;
}

}  // namespace tutti::cli
