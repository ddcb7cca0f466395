#include "platform/cluster_discovery.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/platform/fake_env.hpp"

namespace lifeboat {
namespace {

using env_table = std::map<std::string, std::string>;
using testing::table_env;

struct valid_case {
  const char* name;
  env_table env;
  int rank;
  int world_size;
  std::string host;
  uint16_t port;
  std::string origin;
  int restart_count = 0;
  bool external = false;
};

class cluster_discovery_valid : public ::testing::TestWithParam<valid_case> {};

TEST_P(cluster_discovery_valid, resolves) {
  auto& c = GetParam();
  auto spec = discover_cluster(table_env(c.env));
  ASSERT_TRUE(spec) << describe(spec.error());
  EXPECT_EQ(spec->rank, c.rank);
  EXPECT_EQ(spec->world_size, c.world_size);
  EXPECT_EQ(spec->coordinator_host, c.host);
  EXPECT_EQ(spec->coordinator_port, c.port);
  EXPECT_EQ(spec->origin, c.origin);
  EXPECT_EQ(spec->restart_count, c.restart_count);
  EXPECT_EQ(spec->coordinator_external, c.external);
}

constexpr char kTfCluster[] =
    R"("cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]})";

INSTANTIATE_TEST_SUITE_P(
    table, cluster_discovery_valid,
    ::testing::Values(
        valid_case{"local", {}, 0, 1, "127.0.0.1", 0, "local"},
        valid_case{"lifeboat",
                   {{"LIFEBOAT_RANK", "2"},
                    {"LIFEBOAT_WORLD_SIZE", "4"},
                    {"LIFEBOAT_COORDINATOR", "10.0.0.1:7000"},
                    {"LIFEBOAT_COORDINATOR_EXTERNAL", "1"},
                    {"LIFEBOAT_RESTART_COUNT", "3"},
                    {"RANK", "9"}},
                   2,
                   4,
                   "10.0.0.1",
                   7000,
                   "lifeboat",
                   3,
                   true},
        valid_case{"lifeboat_single_without_coordinator",
                   {{"LIFEBOAT_RANK", "0"}, {"LIFEBOAT_WORLD_SIZE", "1"}},
                   0,
                   1,
                   "127.0.0.1",
                   0,
                   "lifeboat"},
        valid_case{"lifeboat_ipv6",
                   {{"LIFEBOAT_RANK", "1"},
                    {"LIFEBOAT_WORLD_SIZE", "2"},
                    {"LIFEBOAT_COORDINATOR", "[::1]:7000"}},
                   1,
                   2,
                   "::1",
                   7000,
                   "lifeboat"},
        valid_case{"tf_chief",
                   {{"TF_CONFIG", std::string{"{"} + kTfCluster +
                                      R"(, "task": {"type": "chief", "index": 0}})"}},
                   0,
                   3,
                   "c0",
                   2223,
                   "tf_config"},
        valid_case{"tf_worker",
                   {{"TF_CONFIG", std::string{"{"} + kTfCluster +
                                      R"(, "task": {"type": "worker", "index": 1}})"}},
                   2,
                   3,
                   "c0",
                   2223,
                   "tf_config"},
        valid_case{
            "tf_workers_only_with_port_override",
            {{"TF_CONFIG",
              R"({"cluster": {"worker": ["a:1000", "b:1000"]}, "task": {"type": "worker", "index": 1}})"},
             {"LIFEBOAT_COORDINATOR_PORT", "9999"}},
            1,
            2,
            "a",
            9999,
            "tf_config"},
        valid_case{"torchrun",
                   {{"RANK", "3"},
                    {"WORLD_SIZE", "8"},
                    {"MASTER_ADDR", "master"},
                    {"MASTER_PORT", "29600"},
                    {"TORCHELASTIC_RESTART_COUNT", "2"}},
                   3,
                   8,
                   "master",
                   29601,
                   "torchrun",
                   2},
        valid_case{"torchrun_defaults",
                   {{"RANK", "0"}, {"WORLD_SIZE", "2"}},
                   0,
                   2,
                   "127.0.0.1",
                   29501,
                   "torchrun"},
        valid_case{"slurm_range",
                   {{"SLURM_PROCID", "5"},
                    {"SLURM_NTASKS", "8"},
                    {"SLURM_JOB_ID", "12345"},
                    {"SLURM_JOB_NODELIST", "node[01-04,07]"},
                    {"SLURM_RESTART_COUNT", "1"}},
                   5,
                   8,
                   "node01",
                   40000 + 12345 % 20000,
                   "slurm",
                   1},
        valid_case{"slurm_list_with_port",
                   {{"SLURM_PROCID", "0"},
                    {"SLURM_NTASKS", "3"},
                    {"SLURM_JOB_NODELIST", "login,b[1-2]"},
                    {"LIFEBOAT_COORDINATOR_PORT", "5000"}},
                   0,
                   3,
                   "login",
                   5000,
                   "slurm"},
        valid_case{"restart_count_override",
                   {{"RANK", "0"},
                    {"WORLD_SIZE", "1"},
                    {"TORCHELASTIC_RESTART_COUNT", "2"},
                    {"LIFEBOAT_RESTART_COUNT", "7"}},
                   0,
                   1,
                   "127.0.0.1",
                   29501,
                   "torchrun",
                   7}),
    [](const ::testing::TestParamInfo<valid_case>& info) { return std::string{info.param.name}; });

struct invalid_case {
  const char* name;
  env_table env;
  std::vector<std::string> mentions;  // words the error must contain
};

class cluster_discovery_invalid : public ::testing::TestWithParam<invalid_case> {};

TEST_P(cluster_discovery_invalid, is_refused_with_a_clear_error) {
  auto& c = GetParam();
  auto spec = discover_cluster(table_env(c.env));
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error(), make_error(errc::invalid_config));
  auto text = describe(spec.error());
  for (auto& word : c.mentions) EXPECT_NE(text.find(word), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(
    table, cluster_discovery_invalid,
    ::testing::Values(
        invalid_case{
            "rank_not_below_world_size",
            {{"LIFEBOAT_RANK", "4"}, {"LIFEBOAT_WORLD_SIZE", "4"}, {"LIFEBOAT_COORDINATOR", "h:1"}},
            {"LIFEBOAT_RANK='4'", "less than"}},
        invalid_case{"rank_not_numeric",
                     {{"LIFEBOAT_RANK", "one"},
                      {"LIFEBOAT_WORLD_SIZE", "4"},
                      {"LIFEBOAT_COORDINATOR", "h:1"}},
                     {"LIFEBOAT_RANK='one'", "integer"}},
        invalid_case{"world_size_zero",
                     {{"LIFEBOAT_RANK", "0"}, {"LIFEBOAT_WORLD_SIZE", "0"}},
                     {"LIFEBOAT_WORLD_SIZE='0'"}},
        invalid_case{"rank_without_world_size",
                     {{"LIFEBOAT_RANK", "0"}},
                     {"LIFEBOAT_WORLD_SIZE is missing"}},
        invalid_case{"missing_coordinator",
                     {{"LIFEBOAT_RANK", "0"}, {"LIFEBOAT_WORLD_SIZE", "2"}},
                     {"LIFEBOAT_COORDINATOR"}},
        invalid_case{"coordinator_port_out_of_range",
                     {{"LIFEBOAT_RANK", "0"},
                      {"LIFEBOAT_WORLD_SIZE", "2"},
                      {"LIFEBOAT_COORDINATOR", "h:70000"}},
                     {"LIFEBOAT_COORDINATOR='h:70000'", "a port in [1, 65535]"}},
        invalid_case{"coordinator_without_port",
                     {{"LIFEBOAT_RANK", "0"},
                      {"LIFEBOAT_WORLD_SIZE", "2"},
                      {"LIFEBOAT_COORDINATOR", "hostonly"}},
                     {"LIFEBOAT_COORDINATOR='hostonly'", "host:port"}},
        invalid_case{"external_flag",
                     {{"LIFEBOAT_RANK", "0"},
                      {"LIFEBOAT_WORLD_SIZE", "1"},
                      {"LIFEBOAT_COORDINATOR_EXTERNAL", "yes"}},
                     {"LIFEBOAT_COORDINATOR_EXTERNAL='yes'"}},
        invalid_case{"tf_bad_json", {{"TF_CONFIG", "{cluster"}}, {"TF_CONFIG", "bad JSON"}},
        invalid_case{
            "tf_ps",
            {{"TF_CONFIG",
              R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}})"}},
            {"'ps'", "parameter-server"}},
        invalid_case{
            "tf_index_out_of_range",
            {{"TF_CONFIG",
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1}})"}},
            {"worker/1"}},
        invalid_case{
            "tf_unknown_task_type",
            {{"TF_CONFIG",
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}})"}},
            {"evaluator"}},
        invalid_case{
            "tf_bad_address",
            {{"TF_CONFIG",
              R"({"cluster": {"worker": ["w"]}, "task": {"type": "worker", "index": 0}})"}},
            {"TF_CONFIG first task='w'"}},
        invalid_case{"torchrun_port_leaves_no_room",
                     {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "65535"}},
                     {"MASTER_PORT", "LIFEBOAT_COORDINATOR_PORT"}},
        invalid_case{"torchrun_bad_port",
                     {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}},
                     {"MASTER_PORT='http'"}},
        invalid_case{
            "slurm_bad_nodelist",
            {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "node[04-01]"}},
            {"SLURM_JOB_NODELIST", "backwards"}},
        invalid_case{"slurm_no_nodelist",
                     {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}},
                     {"SLURM_JOB_NODELIST"}},
        invalid_case{"slurm_restart_count",
                     {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_RESTART_COUNT", "-1"}},
                     {"SLURM_RESTART_COUNT='-1'"}}),
    [](const ::testing::TestParamInfo<invalid_case>& info) {
      return std::string{info.param.name};
    });

TEST(cluster_discovery, token_is_read_for_every_origin) {
  env_table env{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"LIFEBOAT_CLUSTER_TOKEN", "s3cret"}};
  auto spec = discover_cluster(table_env(env));
  ASSERT_TRUE(spec) << describe(spec.error());
  EXPECT_EQ(spec->token, "s3cret");
}

// Without LIFEBOAT_CLUSTER_TOKEN, the workers of one job derive one token and
// another job (another run id, master port, task list, job or step) another.
TEST(cluster_discovery, token_is_derived_per_job_without_the_variable) {
  auto token = [](env_table env) {
    auto spec = discover_cluster(table_env(env));
    EXPECT_TRUE(spec) << describe(spec.error());
    return spec ? spec->token : std::string{};
  };
  env_table torchrun{{"RANK", "0"},
                     {"WORLD_SIZE", "3"},
                     {"MASTER_ADDR", "10.0.0.1"},
                     {"MASTER_PORT", "29500"},
                     {"TORCHELASTIC_RUN_ID", "job-a"}};
  auto torchrun_token = token(torchrun);
  EXPECT_FALSE(torchrun_token.empty());
  auto other = torchrun;
  other["RANK"] = "2";
  EXPECT_EQ(token(other), torchrun_token);
  other["TORCHELASTIC_RUN_ID"] = "job-b";
  EXPECT_NE(token(other), torchrun_token);
  other = torchrun;
  other["MASTER_PORT"] = "29600";
  EXPECT_NE(token(other), torchrun_token);

  auto tf = [](const char* workers, int index) {
    return env_table{{"TF_CONFIG", std::string{R"({"cluster": {"worker": [)"} + workers +
                                       R"(]}, "task": {"type": "worker", "index": )" +
                                       std::to_string(index) + "}}"}};
  };
  EXPECT_EQ(token(tf(R"("a:1000", "b:1000")", 0)), token(tf(R"("a:1000", "b:1000")", 1)));
  EXPECT_NE(token(tf(R"("a:1000", "b:1000")", 0)), token(tf(R"("a:2000", "b:2000")", 0)));

  env_table slurm{{"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "2"},
                  {"SLURM_JOB_NODELIST", "node[01-02]"},
                  {"SLURM_JOB_ID", "77"},
                  {"SLURM_STEP_ID", "0"}};
  auto slurm_token = token(slurm);
  other = slurm;
  other["SLURM_PROCID"] = "1";
  EXPECT_EQ(token(other), slurm_token);
  other["SLURM_JOB_ID"] = "78";
  EXPECT_NE(token(other), slurm_token);
  other = slurm;
  other["SLURM_STEP_ID"] = "1";
  EXPECT_NE(token(other), slurm_token);

  torchrun["LIFEBOAT_CLUSTER_TOKEN"] = "s3cret";
  EXPECT_EQ(token(torchrun), "s3cret");
}

}  // namespace
}  // namespace lifeboat
