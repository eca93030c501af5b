// tutti: the command-line entry point. Dispatches to the subcommands in
// commands.h.
#include <sys/resource.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tutti/cli/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const tutti::cli::Args&);
};

constexpr Command kCommands[] = {
    {"demo", "build the demo model repository (train, profile) and print it",
     tutti::cli::DemoCommand},
    {"train", "train a built-in model on Fashion-MNIST into a repository",
     tutti::cli::TrainCommand},
    {"train-parity", "train a ParM parity model for a deployed model", tutti::cli::TrainParityCommand},
    {"eval-parity", "measure ParM's available, degraded and overall accuracy", tutti::cli::EvalParityCommand},
    {"profile", "measure latency profiles l(b) of models on this CPU", tutti::cli::ProfileCommand},
    {"models", "validate a model repository and list its models", tutti::cli::ModelsCommand},
    {"onnx", "inspect an ONNX model; run ONNX's conformance tests on the import", tutti::cli::OnnxCommand},
    {"serve", "serve a model repository over KServe v2 HTTP and gRPC (one process)", tutti::cli::ServeCommand},
    {"scheduler", "distributed mode: a scheduler (leader or hot spare, via etcd)", tutti::cli::SchedulerCommand},
    {"frontend", "distributed mode: a KServe v2 HTTP/gRPC frontend", tutti::cli::FrontendCommand},
    {"backend", "distributed mode: a backend running one executor", tutti::cli::BackendCommand},
    {"cluster", "distributed mode on this machine: etcd + all processes", tutti::cli::ClusterCommand},
    {"load", "open-loop load generator for a KServe v2 server", tutti::cli::LoadCommand},
    {"offline", "a batch job of images on a server's spare capacity (pauses under online load)",
     tutti::cli::OfflineCommand},
    {"bench", "reproduce a paper's experiment end to end (parm: ParM's tail latency)", tutti::cli::BenchCommand},
    {"sim", "simulate scheduling policies on emulated GPUs (virtual time)", tutti::cli::SimCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: tutti <command> [flags]\n\n"
         "Tutti serves deep-neural-network inference under latency objectives.\n\n"
         "commands:\n";
  for (const Command& c : kCommands) out << absl::StrFormat("  %-13s %s\n", c.name, c.summary);
  out << "\nRun `tutti <command> --help` for a command's flags.\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Serving and load generation hold a socket per keep-alive connection:
  // allow as many files as the hard limit does.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    PrintUsage(std::cout);
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(tutti::cli::Args(argv + 2, argv + argc));
  }
  std::cerr << "tutti: unknown command '" << name << "'\n\n";
  PrintUsage(std::cerr);
  return 2;
}
