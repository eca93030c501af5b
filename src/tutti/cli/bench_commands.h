// The subcommands of `tutti bench` (bench_command.cc dispatches): each
// takes the arguments after its name and returns the process's exit code.
#ifndef TUTTI_CLI_BENCH_COMMANDS_H_
#define TUTTI_CLI_BENCH_COMMANDS_H_

#include "tutti/cli/command_util.h"

namespace tutti::cli {

int BenchModelLess(const Args& args);  // INFaaS: model-less queries
int BenchParm(const Args& args);       // ParM's tail latency
int BenchPartition(const Args& args);  // Symphony's sub-cluster partitioning
int BenchPrefix(const Args& args);     // Nexus's prefix batching
int BenchStateful(const Args& args);   // HAMS's replication modes

}  // namespace tutti::cli

#endif  // TUTTI_CLI_BENCH_COMMANDS_H_
