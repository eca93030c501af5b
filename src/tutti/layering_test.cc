// The folder tree reads like the architecture: every include from one
// src/tutti/ folder into another points to a lower layer of the written
// order — no folder-level cycle — and the scheduling and simulation
// folders, with every folder they reach, include neither libtorch nor
// gRPC. (Tests may reach further: *_test.cc files are not counted; the
// helpers they share live in testing/.)
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

namespace fs = std::filesystem;

struct Tree {
  std::map<std::string, std::set<std::string>> uses;        // folder -> folders it includes
  std::map<std::string, std::set<std::string>> heavy;       // folder -> "torch" / "grpc" it includes
  std::map<std::pair<std::string, std::string>, std::string> why;  // an include that makes the arrow
};

Tree ReadTree() {
  const char* source = std::getenv("TUTTI_SOURCE_DIR");
  const fs::path root = fs::path(source ? source : ".") / "src" / "tutti";
  const std::regex tutti_include(R"re(^\s*#\s*include\s+"tutti/([a-z_]+)/)re");
  const std::regex torch_include(R"re(^\s*#\s*include\s+<(torch|ATen|c10)/)re");
  const std::regex grpc_include(R"re(^\s*#\s*include\s+<grpc(pp)?/|\.grpc\.pb\.h")re");
  Tree tree;
  for (const fs::directory_entry& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string folder = dir.path().filename().string();
    tree.uses[folder];
    for (const fs::directory_entry& file : fs::directory_iterator(dir.path())) {
      const std::string name = file.path().filename().string();
      const bool code = name.ends_with(".h") || name.ends_with(".cc");
      if (!code || name.ends_with("_test.cc")) continue;
      std::ifstream in(file.path());
      std::smatch m;
      for (std::string line; std::getline(in, line);) {
        if (std::regex_search(line, m, tutti_include) && m[1] != folder) {
          tree.uses[folder].insert(m[1]);
          tree.why.emplace(std::make_pair(folder, std::string(m[1])), folder + "/" + name);
        }
        if (std::regex_search(line, torch_include)) tree.heavy[folder].insert("torch");
        if (std::regex_search(line, grpc_include)) tree.heavy[folder].insert("grpc");
      }
    }
  }
  return tree;
}

TEST(LayeringTest, TheTreeWasRead) {
  const Tree tree = ReadTree();
  EXPECT_GE(tree.uses.size(), 15u);
  EXPECT_TRUE(tree.uses.at("scheduler").contains("core"));
  EXPECT_TRUE(tree.heavy.at("models").contains("torch"));
  EXPECT_TRUE(tree.heavy.at("frontend").contains("grpc"));
}

// The layers, from the bottom (docs/architecture/design.md, "The layers"):
// a folder includes only folders of lower layers, so the tree has no
// folder-level cycle and each layer can be read knowing only those below.
const std::vector<std::vector<std::string>>& Layers() {
  static const auto* layers = new std::vector<std::vector<std::string>>{
      {"core", "coding", "proto"},
      {"planner", "workload", "datasets", "repository", "net", "grpc", "console", "profiler", "onnx", "tracing",
       "netdelay"},
      {"scheduler", "autoscale", "models", "codec", "etcd"},
      {"delays", "executors"},
      {"config", "replication", "serving", "loadgen"},
      {"simulator", "graphs", "sequences", "stages", "frontend", "distributed"},
      {"deployment", "testing"},
      {"server"},
      {"experiments"},
      {"cli"},
  };
  return *layers;
}

TEST(LayeringTest, EveryIncludePointsToALowerLayer) {
  const Tree tree = ReadTree();
  std::map<std::string, int> layer;
  for (size_t i = 0; i < Layers().size(); ++i) {
    for (const std::string& f : Layers()[i]) layer[f] = static_cast<int>(i);
  }
  std::vector<std::string> wrong;
  for (const auto& [folder, uses] : tree.uses) {
    if (!layer.contains(folder)) {
      wrong.push_back(folder + " has no layer: give it one in Layers() and in the design doc");
      continue;
    }
    for (const std::string& g : uses) {
      if (layer.contains(g) && layer.at(g) < layer.at(folder)) continue;
      wrong.push_back(folder + " (layer " + std::to_string(layer.at(folder)) + ") -> " + g + " (layer " +
                      (layer.contains(g) ? std::to_string(layer.at(g)) : std::string("none")) + ") in " +
                      tree.why.at({folder, g}));
    }
  }
  EXPECT_THAT(wrong, ::testing::IsEmpty()) << absl::StrJoin(wrong, "\n");
}

TEST(LayeringTest, SchedulingAndSimulationReachNeitherTorchNorGrpc) {
  const Tree tree = ReadTree();
  for (const std::string start : {"core", "planner", "scheduler", "delays", "simulator"}) {
    std::set<std::string> reached;
    std::function<void(const std::string&)> reach = [&](const std::string& f) {
      if (!reached.insert(f).second || !tree.uses.contains(f)) return;
      for (const std::string& g : tree.uses.at(f)) reach(g);
    };
    reach(start);
    for (const std::string& f : reached) {
      EXPECT_FALSE(tree.heavy.contains(f)) << start << " reaches " << f << ", which includes "
                                           << absl::StrJoin(tree.heavy.at(f), " and ");
    }
  }
}

}  // namespace
}  // namespace tutti
