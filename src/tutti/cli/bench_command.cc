// tutti bench: the papers' experiments, one subcommand each (bench_*.cc).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/cli/commands.h"

namespace tutti::cli {

int BenchCommand(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: tutti bench <experiment> [flags]\n\nexperiments:\n"
                 "  model-less INFaaS: model-less queries, variants chosen and scaled, vs fixed variants\n"
                 "  parm   ParM's tail-latency experiment: none vs Equal-Resources vs ParM\n"
                 "  partition Symphony's sub-cluster partitioning: the MILP (CBC) vs greedy vs random\n"
                 "  prefix Nexus's prefix batching: N models sharing their leading layers, with and without\n"
                 "  stateful HAMS: a stateful model's states replicated with none, remus, nspb or checkpoint\n";
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "model-less") return BenchModelLess(Args(args.begin() + 1, args.end()));
  if (args[0] == "parm") return BenchParm(Args(args.begin() + 1, args.end()));
  if (args[0] == "partition") return BenchPartition(Args(args.begin() + 1, args.end()));
  if (args[0] == "prefix") return BenchPrefix(Args(args.begin() + 1, args.end()));
  if (args[0] == "stateful") return BenchStateful(Args(args.begin() + 1, args.end()));
  return Fail(absl::InvalidArgumentError(
      absl::StrCat("unknown experiment '", args[0], "' (expected: model-less, parm, partition, prefix, stateful)")));
}

}  // namespace tutti::cli
