// The folder tree reads like the architecture: every include from one
// src/tutti/ folder into another points down — no folder-level cycle — and
// the scheduling and simulation folders, with every folder they reach,
// include neither libtorch nor gRPC. (Tests may reach further: *_test.cc
// files are not counted.)
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

TEST(LayeringTest, NoFolderLevelIncludeCycle) {
  const Tree tree = ReadTree();
  std::map<std::string, int> state;  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::string> path;
  std::vector<std::string> cycles;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    for (const std::string& g : tree.uses.at(f)) {
      if (!tree.uses.contains(g)) continue;
      if (state[g] == 1) {
        std::vector<std::string> cycle(std::find(path.begin(), path.end(), g), path.end());
        cycle.push_back(g);
        std::string text = absl::StrJoin(cycle, " -> ");
        for (size_t i = 0; i + 1 < cycle.size(); ++i) {
          text += "\n    " + cycle[i] + " -> " + cycle[i + 1] + " in " + tree.why.at({cycle[i], cycle[i + 1]});
        }
        cycles.push_back(text);
      } else if (state[g] == 0) {
        visit(g);
      }
    }
    path.pop_back();
    state[f] = 2;
  };
  for (const auto& [folder, uses] : tree.uses) {
    if (state[folder] == 0) visit(folder);
  }
  EXPECT_THAT(cycles, ::testing::IsEmpty()) << absl::StrJoin(cycles, "\n");
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
