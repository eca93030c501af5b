// deploy/kubernetes/ must not rot: every manifest parses, the serve config
// it ships is one `tutti` accepts for the image's repository (with
// autoscaling on), every flag a tutti container passes is one its command
// lists in --help, and the HPA's ceiling is the config's slot count.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tutti/repository/model_repository.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/deployment/server_config.h"
#include "yaml-cpp/yaml.h"

namespace tutti {
namespace {

std::vector<YAML::Node> Documents() {
  std::vector<YAML::Node> docs;
  for (const auto& entry : std::filesystem::directory_iterator(TUTTI_SOURCE_DIR "/deploy/kubernetes")) {
    if (entry.path().extension() != ".yaml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string())) {
      if (doc.IsMap()) docs.push_back(doc);
    }
  }
  return docs;
}

// node[k0][k1]…, or an undefined node where a key is missing (yaml-cpp
// throws on indexing past a missing key).
YAML::Node Path(YAML::Node node, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (!node.IsMap() || !node[k]) return YAML::Node(YAML::NodeType::Undefined);
    node = node[k];
  }
  return node;
}

std::string Help(const std::string& command) {
  const std::string line = absl::StrCat(TUTTI_BINARY, " ", command, " --help 2>&1");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(line.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  while (pipe && fgets(buf, sizeof(buf), pipe.get()) != nullptr) out += buf;
  return out;
}

TEST(KubernetesManifestsTest, EveryManifestNamesItsKind) {
  const std::vector<YAML::Node> docs = Documents();
  ASSERT_GE(docs.size(), 8u);
  for (const YAML::Node& d : docs) {
    EXPECT_TRUE(d["apiVersion"].IsScalar());
    EXPECT_TRUE(d["kind"].IsScalar());
    EXPECT_TRUE(d["metadata"]["name"].IsScalar());
  }
}

TEST(KubernetesManifestsTest, TheServeConfigIsOneTuttiAcceptsWithAutoscaling) {
  std::string yaml;
  int hpa_max = 0;
  for (const YAML::Node& d : Documents()) {
    if (d["kind"].as<std::string>() == "ConfigMap" && d["metadata"]["name"].as<std::string>() == "tutti-config") {
      yaml = d["data"]["serve.yaml"].as<std::string>();
    }
    if (d["kind"].as<std::string>() == "HorizontalPodAutoscaler") hpa_max = d["spec"]["maxReplicas"].as<int>();
  }
  ASSERT_FALSE(yaml.empty());
  absl::StatusOr<ServerConfig> config = ParseServerConfig(yaml);
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(TUTTI_SOURCE_DIR "/bench/emulated_repository");
  ASSERT_TRUE(repo.ok()) << repo.status();
  absl::StatusOr<ServerConfig> resolved = ResolveServerConfig(*config, *repo);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(LayOutCluster(*repo, *resolved).ok());
  ASSERT_TRUE(resolved->autoscale.has_value());
  EXPECT_EQ(hpa_max, resolved->executors[0].count) << "the HPA may not ask for more backends than there are slots";
}

TEST(KubernetesManifestsTest, EveryFlagATuttiContainerPassesIsOneItsCommandTakes) {
  int containers = 0;
  for (const YAML::Node& d : Documents()) {
    const YAML::Node spec = Path(d, {"spec", "template", "spec", "containers"});
    if (!spec.IsSequence()) continue;
    for (const YAML::Node& c : spec) {
      if (!absl::StartsWith(c["image"].as<std::string>(), "tutti:")) continue;
      ++containers;
      const YAML::Node args = c["args"];
      ASSERT_TRUE(args.IsSequence() && args.size() > 0);
      const std::string command = args[0].as<std::string>();
      const std::string help = Help(command);
      ASSERT_TRUE(absl::StrContains(help, absl::StrCat("tutti ", command))) << help;
      for (size_t i = 1; i < args.size(); ++i) {
        const std::string a = args[i].as<std::string>();
        if (!absl::StartsWith(a, "--")) continue;
        EXPECT_TRUE(absl::StrContains(help, absl::StrCat(a.substr(0, a.find('=')), " ")))
            << "tutti " << command << " has no flag " << a;
      }
    }
  }
  EXPECT_EQ(containers, 3) << "scheduler, frontend and backend";
}

}  // namespace
}  // namespace tutti
