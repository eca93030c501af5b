#include "tutti/simulator/experiment.h"

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/simulator/goodput.h"
#include "tutti/simulator/report.h"
#include "tutti/testing/source_dir.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

constexpr char kExperiment[] = R"(
seed: 3
duration_s: 4
warmup_s: 0.5
gpus: 8
policies: [deferred, eager]
drop: early
jitter: 0.02
network_us: {ctrl: 10, data_per_request: 1, resp: 20}
timeout_delays_ms: [1, 2]
models:
  - {name: ResNet50, alpha_ms: 1.053, beta_ms: 5.072, slo_ms: 25, max_queue_delay_ms: 3}
  - {zoo: data/profiles/symphony_zoo_a100.csv, names: [DenseNet121, ResNet50V2], slo_scale: 2}
workload:
  arrival: gamma
  gamma_shape: 0.5
  rate: 4000
  zipf: 1
  phases: [{at_s: 2, rate: 6000}]
autoscale: {interval_s: 0.5, headroom: 0.3, min_gpus: 2, initial_gpus: 4, provision_delay_s: 0.25}
)";

absl::StatusOr<Experiment> Parse(const std::string& text) {
  return ParseExperiment(text, testing::SourceDir());
}

TEST(ExperimentTest, ParsesEveryKey) {
  absl::StatusOr<Experiment> e = Parse(kExperiment);
  ASSERT_TRUE(e.ok()) << e.status();
  const SimConfig& c = e->config;
  EXPECT_EQ(c.seed, 3u);
  EXPECT_EQ(c.duration, Seconds(4));
  EXPECT_EQ(c.warmup, Millis(500));
  EXPECT_EQ(c.cluster.gpus, 8);
  EXPECT_EQ(e->policies, (std::vector<std::string>{"deferred", "eager"}));
  EXPECT_EQ(c.options.drop, DropPolicy::kEarly);
  EXPECT_EQ(c.cluster.delays.resp, Micros(20));
  EXPECT_EQ(e->timeout_delays, (std::vector<Duration>{Millis(1), Millis(2)}));
  ASSERT_EQ(c.cluster.models.size(), 3u);
  EXPECT_EQ(c.cluster.models[0].max_queue_delay, Millis(3));
  EXPECT_EQ(c.cluster.models[1].name, "DenseNet121");
  EXPECT_EQ(c.cluster.models[1].slo, Millis(42));  // 21 ms × 2
  EXPECT_EQ(c.workload.arrival, ArrivalKind::kGamma);
  EXPECT_EQ(c.workload.phases.size(), 1u);
  ASSERT_EQ(OfferedModelRates(c).size(), 3u);
  EXPECT_NEAR(OfferedModelRates(c)[0], 4000 / (1 + 0.5 + 1.0 / 3), 1e-6);
  ASSERT_TRUE(c.autoscale.has_value());
  EXPECT_EQ(c.autoscale->interval, Millis(500));
  EXPECT_EQ(c.autoscale->headroom, 0.3);
  EXPECT_EQ(c.autoscale->initial_gpus, 4);
  EXPECT_EQ(c.autoscale->max_gpus, 0);  // every GPU
  EXPECT_EQ(c.autoscale->provision_delay, Millis(250));
  EXPECT_TRUE(RunSimulation(c).ok());
}

TEST(ExperimentTest, ErrorsNameTheField) {
  auto error = [](const std::string& from, const std::string& to) {
    absl::StatusOr<Experiment> e = Parse(absl::StrReplaceAll(kExperiment, {{from, to}}));
    EXPECT_FALSE(e.ok()) << to;
    return e.ok() ? "" : std::string(e.status().message());
  };
  EXPECT_THAT(error("jitter: 0.02", "jiter: 0.02"), HasSubstr("unknown field 'jiter'"));
  EXPECT_THAT(error("gpus: 8", "gpu: 8"), HasSubstr("missing required field 'gpus'"));
  EXPECT_THAT(error("arrival: gamma", "arrival: bursty"), HasSubstr("unknown arrival 'bursty'"));
  EXPECT_THAT(error("slo_ms: 25,", "slo: 25,"), HasSubstr("models[0]"));
  EXPECT_THAT(error("drop: early", "drop: sometimes"), HasSubstr("expected lazy or early"));
  EXPECT_THAT(error("symphony_zoo_a100.csv", "nope.csv"), HasSubstr("file not found"));
  EXPECT_THAT(error("alpha_ms: 1.053", "alpha_ms: fast"), HasSubstr("'models[0].alpha_ms': expected a number"));
  EXPECT_THAT(error("{at_s: 2, rate: 6000}", "{at: 2}"), HasSubstr("workload.phases[0]"));
  EXPECT_THAT(error("headroom: 0.3", "headroom: 1.3"), HasSubstr("'autoscale.headroom': must be in [0, 1)"));
  EXPECT_THAT(error("min_gpus: 2", "min_gpu: 2"), HasSubstr("unknown field 'autoscale.min_gpu'"));
  // The policy is checked as a serve config's is, its variants allowed.
  EXPECT_THAT(error("drop: early", "drop: early\npolicy: fifo"), HasSubstr("'policy': unknown policy 'fifo'"));
  EXPECT_THAT(error("drop: early", "drop: early\npolicy: eager+late"), HasSubstr("+early, +latency, +consolidate"));
  EXPECT_TRUE(Parse(absl::StrReplaceAll(kExperiment, {{"drop: early", "drop: early\npolicy: deferred+early"}})).ok());
}

TEST(ExperimentTest, ACustomClusterGivesModelsGpusAndDefaultsTheRestOverrides) {
  SimConfig cluster;
  cluster.cluster.models = {{"resnet50", *LatencyProfile::Linear(Micros(268), Micros(5172), 64), Millis(20)}};
  cluster.cluster.gpus = 4;
  cluster.policy = "eager";
  cluster.options.drop = DropPolicy::kEarly;
  cluster.options.frontrun_slack = Micros(500);
  // Without a workload: the rate comes later (tutti sim --rate).
  absl::StatusOr<Experiment> e = ParseExperiment("seed: 5", ".", &cluster);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->config.cluster.num_gpus(), 4);
  EXPECT_EQ(e->config.policy, "eager");
  EXPECT_EQ(e->config.options.drop, DropPolicy::kEarly);
  EXPECT_EQ(e->config.seed, 5u);
  EXPECT_EQ(e->config.workload.rate, 0);
  // The experiment's keys override the serve config's.
  e = ParseExperiment("policy: deferred\nfrontrun_slack_ms: 2\nworkload: {rate: 300}", ".", &cluster);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->config.policy, "deferred");
  EXPECT_EQ(e->config.options.frontrun_slack, Millis(2));
  EXPECT_EQ(e->config.options.drop, DropPolicy::kEarly);
  EXPECT_EQ(e->config.workload.rate, 300);
  // Models and GPUs come from the serve config only.
  e = ParseExperiment("gpus: 8", ".", &cluster);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("field 'gpus': comes from the serve config"));
  EXPECT_FALSE(ParseExperiment("models: []", ".", &cluster).ok());
  EXPECT_THAT(ParseExperiment("inject: {compute_scale: {4: 2}}", ".", &cluster).status().message(),
              HasSubstr("no GPU 4 (the cluster has 4)"));
}

// Two models for a graph: detect, then recognize.
constexpr char kTwoStages[] = R"(
gpus: 8
models:
  - {name: detect, alpha_ms: 20, beta_ms: 10, slo_ms: 100}
  - {name: recognize, alpha_ms: 2, beta_ms: 9, slo_ms: 100}
workload: {rate: 100}
)";

TEST(ExperimentTest, AGraphSplitsItsObjectiveAmongTheModels) {
  const std::string base = kTwoStages;
  absl::StatusOr<Experiment> e = Parse(base + "graph: {objective_ms: 100, gamma: [10], split: even}");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->config.graph.has_value());
  EXPECT_EQ(e->config.graph->objective, Millis(100));
  EXPECT_EQ(e->config.graph->gamma, (std::vector<double>{1, 10}));
  EXPECT_EQ(e->config.graph->shares, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(e->config.cluster.models[0].slo, Millis(50));  // the models' SLOs are their shares
  e = Parse(base + "graph: {objective_ms: 100, gamma: [0.1]}");  // Nexus's split: detect takes the most
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_GT(e->config.graph->shares[0], 0.5);
  EXPECT_LE(e->config.graph->shares[0] + e->config.graph->shares[1], 1 + 1e-9);
  EXPECT_EQ(e->config.cluster.models[0].slo + e->config.cluster.models[1].slo, Millis(100));
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 100, gamma: [1, 2]}").status().message(),
              HasSubstr("graph.gamma': expected 1 numbers"));
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 15, gamma: [1]}").status().message(),
              HasSubstr("no split of the objective fits"));
}

TEST(ExperimentTest, AMemoryBudgetAndCopiesOfAModelMakeManyModelsThatLoad) {
  absl::StatusOr<Experiment> e = Parse(R"(
gpus: 1
memory: {gpu_gb: 1, load_gb_per_s: 10, load_overhead_ms: 1}
models:
  - {name: net, alpha_ms: 1, beta_ms: 2, slo_ms: 100, weights_mb: 100, copies: 3}
workload: {rate: 100, zipf: 1}
)");
  ASSERT_TRUE(e.ok()) << e.status();
  const ClusterSpec& c = e->config.cluster;
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_EQ(c.models[2].name, "net#3");
  EXPECT_EQ(c.models[2].weights_bytes, 100'000'000);
  EXPECT_EQ(c.memory.gpu_bytes, 1'000'000'000);
  EXPECT_EQ(c.memory.LoadTime(c.models[0].weights_bytes), Millis(11));
  EXPECT_EQ(e->policies, std::vector<std::string>{"loads"});  // the only policy that plans loads
  EXPECT_THAT(Parse(R"(
gpus: 1
memory: {gpu_gb: 0.05}
models: [{name: net, alpha_ms: 1, beta_ms: 2, slo_ms: 100, weights_mb: 100}]
workload: {rate: 100}
)").status().message(),
              HasSubstr("do not fit a GPU"));
}

TEST(ExperimentTest, AGraphTakesAnExplicitSplitInMilliseconds) {
  const std::string base = kTwoStages;
  absl::StatusOr<Experiment> e = Parse(base + "graph: {objective_ms: 100, gamma: [1], split: [70, 20]}");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->config.graph->shares, (std::vector<double>{0.7, 0.2}));
  EXPECT_EQ(e->config.cluster.models[0].slo, Millis(70));
  EXPECT_EQ(e->config.cluster.models[1].slo, Millis(30));  // the last step is due at the objective
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 100, gamma: [1], split: [70]}").status().message(),
              HasSubstr("expected 2 budgets"));
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 100, gamma: [1], split: [70, 40]}").status().message(),
              HasSubstr("add up to more than objective_ms"));
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 100, gamma: [1], split: [0, 40]}").status().message(),
              HasSubstr("must be positive"));
  EXPECT_THAT(Parse(base + "graph: {objective_ms: 100, gamma: [1], split: fast}").status().message(),
              HasSubstr("expected dp, even or a list"));
}

TEST(ExperimentTest, PolicyVariantsExpandSweeps) {
  Experiment e = *Parse(kExperiment);
  e.early_drop_windows = {8, 12};
  auto timeout = PolicyVariants(e, "timeout");
  ASSERT_EQ(timeout.size(), 2u);
  EXPECT_EQ(timeout[1].first, "timeout(2ms)");
  EXPECT_EQ(timeout[1].second.cluster.models[0].max_queue_delay, Millis(2));
  auto early = PolicyVariants(e, "deferred+early");
  ASSERT_EQ(early.size(), 2u);
  EXPECT_EQ(early[0].first, "deferred+early(w8)");
  EXPECT_EQ(early[0].second.policy, "deferred");
  EXPECT_EQ(early[0].second.options.drop, DropPolicy::kEarly);
  EXPECT_EQ(early[1].second.cluster.models[0].early_drop_window, 12);
  EXPECT_EQ(PolicyVariants(e, "eager").size(), 1u);
}

// An experiment says what runs: a one-entry `policies` is its policy, and a
// key the command will not read is reported, not ignored.
TEST(ExperimentTest, AOneEntryPoliciesIsThePolicyAndUnreadKeysAreReported) {
  const std::string base = "gpus: 8\nmodels: [{name: m, alpha_ms: 1, beta_ms: 5, slo_ms: 25}]\nworkload: {rate: 100}\n";
  Experiment one = *ParseExperiment(base + "policies: [deferred+early]", ".");
  EXPECT_EQ(one.config.policy, "deferred+early");
  EXPECT_TRUE(UnreadKeys(one, "goodput").empty());
  EXPECT_TRUE(UnreadKeys(one, "compare").empty());
  EXPECT_EQ(ConfigForPolicy(one.config, one.config.policy).options.drop, DropPolicy::kEarly);

  Experiment both = *ParseExperiment(base + "policy: eager\npolicies: [deferred+early]", ".");
  EXPECT_EQ(both.config.policy, "eager") << "`policy` stands when given";
  ASSERT_EQ(UnreadKeys(both, "compare").size(), 1u);
  EXPECT_THAT(UnreadKeys(both, "compare")[0], ::testing::StartsWith("policy "));

  Experiment many = *ParseExperiment(base + "policies: [deferred, eager]\ntimeout_delays_ms: [1, 2]", ".");
  EXPECT_EQ(many.config.policy, "adaptive") << "the default";
  const std::vector<std::string> unread = UnreadKeys(many, "run");
  ASSERT_EQ(unread.size(), 2u);
  EXPECT_THAT(unread[0], ::testing::HasSubstr("policies (2 entries"));
  EXPECT_THAT(unread[1], ::testing::StartsWith("timeout_delays_ms"));
  EXPECT_TRUE(UnreadKeys(many, "compare").empty());
}

TEST(ExperimentTest, ScaleWorkloadScalesEveryPhase) {
  WorkloadSpec w{.rate = 10, .phases = {{Seconds(1), 20}}};
  WorkloadSpec s = ScaleWorkload(w, 3);
  EXPECT_DOUBLE_EQ(s.rate, 30);
  EXPECT_DOUBLE_EQ(s.phases[0].rate, 60);
}

// Symphony Table 2: with constant arrivals, deferred scheduling on 8 GPUs
// reaches the staggered bound of 5839 r/s for ResNet50 (SLO 25 ms) within 1%.
TEST(GoodputTest, DeferredReachesTheStaggeredBoundWithConstantArrivals) {
  absl::StatusOr<Experiment> e = Parse(R"(
duration_s: 3
warmup_s: 0.5
gpus: 8
models: [{name: ResNet50, alpha_ms: 1.053, beta_ms: 5.072, slo_ms: 25}]
workload: {arrival: constant, rate: 4000}
)");
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<GoodputResult> g = FindGoodput(e->config, 0.002);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_GE(g->rate, 0.99 * 5839);
  EXPECT_LE(g->rate, 5839 * 1.01);  // the bound is an upper bound
  EXPECT_TRUE(MeetsSlo(g->at_rate));
  EXPECT_NEAR(g->at_rate.total.MeanBatch(), 16, 1.5);
}

TEST(ReportTest, TableCsvAndPlots) {
  absl::StatusOr<Experiment> e = Parse(kExperiment);
  ASSERT_TRUE(e.ok());
  e->config.record_timeline = true;
  e->config.duration = Millis(600);
  PolicyRun run{"deferred", 0, *RunSimulation(e->config)};
  run.goodput = run.result.Goodput();
  std::ostringstream table;
  PrintSimResult(run.result, table);
  EXPECT_THAT(table.str(), HasSubstr("ResNet50"));
  EXPECT_THAT(table.str(), HasSubstr("autoscaling advice"));
  std::ostringstream cmp;
  PrintComparison({run, run}, cmp);
  EXPECT_THAT(cmp.str(), HasSubstr("1.00x"));
  testing::TempDir dir;
  ASSERT_TRUE(WriteCsv({run}, dir.path() + "/r.csv").ok());
  std::ifstream csv(dir.path() + "/r.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_THAT(header, HasSubstr("policy,model,arrived"));
  absl::Status plots = WritePlots({run}, dir.path() + "/plots");
  ASSERT_TRUE(plots.ok()) << plots;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/plots/goodput.png"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/plots/batch_cdf.png"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/plots/timeline_deferred.png"));
}

}  // namespace
}  // namespace tutti
