// The `tutti` subcommands. Each takes the arguments after its name, prints
// results on stdout and progress/errors on stderr, and returns the process
// exit code (0 ok, 1 failure, 2 usage error).
#ifndef TUTTI_CLI_COMMANDS_H_
#define TUTTI_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace tutti::cli {

using Args = std::vector<std::string>;

int TrainCommand(const Args& args);
int ProfileCommand(const Args& args);
int ModelsCommand(const Args& args);
int DemoCommand(const Args& args);
int SimCommand(const Args& args);
int ServeCommand(const Args& args);
int LoadCommand(const Args& args);
int OfflineCommand(const Args& args);
int TrainParityCommand(const Args& args);
int EvalParityCommand(const Args& args);
int BenchCommand(const Args& args);
int SchedulerCommand(const Args& args);
int FrontendCommand(const Args& args);
int BackendCommand(const Args& args);
int ClusterCommand(const Args& args);
int OnnxCommand(const Args& args);

}  // namespace tutti::cli

#endif  // TUTTI_CLI_COMMANDS_H_
