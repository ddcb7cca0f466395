// Eight real worker processes against one service on 127.0.0.1.

#include <algorithm>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

using namespace lifeboat;
using namespace lifeboat::test;
using std::chrono::milliseconds;

namespace {

constexpr int world_size = 8;
constexpr milliseconds heartbeat_timeout = fixture_heartbeat_timeout;
constexpr milliseconds heartbeat_interval = fixture_heartbeat_interval;
constexpr milliseconds line_deadline{20000};

class cluster_test : public service_fixture {
 protected:
  void SetUp() override {
    start_service(world_size);
    for (int r = 0; r < world_size; ++r)
      workers.push_back(std::make_unique<child_process>(std::vector<std::string>{
          lifeboat::test::built(COORDINATION_WORKER), "127.0.0.1", std::to_string(port),
          std::to_string(r), std::to_string(world_size), fixture_token, "0",
          std::to_string(heartbeat_interval.count())}));
    for (auto& w : workers) ASSERT_EQ(w->read_line(line_deadline), "joined");
  }

  void TearDown() override {
    workers.clear();
    service_fixture::TearDown();
  }

  // Sends `line` to every listed rank first, then collects their answers, so
  // the commands run concurrently.
  std::vector<std::string> all(const std::vector<int>& ranks, const std::string& line) {
    for (auto r : ranks) workers[r]->send_line(line);
    std::vector<std::string> answers;
    for (auto r : ranks) answers.push_back(workers[r]->read_line(line_deadline).value_or("none"));
    return answers;
  }

  static std::vector<int> ranks_except(std::initializer_list<int> skip) {
    std::vector<int> result;
    for (int r = 0; r < world_size; ++r)
      if (std::find(skip.begin(), skip.end(), r) == skip.end()) result.push_back(r);
    return result;
  }

  std::vector<std::unique_ptr<child_process>> workers;
};

TEST_F(cluster_test, kv_barrier_messages_errors_and_losses_across_processes) {
  auto everyone = ranks_except({});
  for (int r = 0; r < world_size; ++r) {
    workers[r]->send_line("insert rank/" + std::to_string(r) + " " + std::to_string(r));
    ASSERT_EQ(workers[r]->read_line(line_deadline), "ok");
  }
  for (int r = 0; r < world_size; ++r) {
    auto next = (r + 1) % world_size;
    workers[r]->send_line("get rank/" + std::to_string(next) + " 5000");
    EXPECT_EQ(workers[r]->read_line(line_deadline), "value " + std::to_string(next));
  }
  for (auto& answer : all(everyone, "barrier first 5000")) EXPECT_EQ(answer, "ok");

  workers[0]->send_line("send -1 chan hello");
  ASSERT_EQ(workers[0]->read_line(line_deadline), "ok");
  for (auto& answer : all(everyone, "message 5000")) EXPECT_EQ(answer, "message 0 chan hello");

  workers[7]->send_line("report 42 boom");
  ASSERT_EQ(workers[7]->read_line(line_deadline), "ok");
  for (auto& answer : all(everyone, "failure 7 5000")) EXPECT_EQ(answer, "failure 7 42 0 boom");

  // SIGKILL: the kernel closes the socket, so the loss is seen at once.
  auto start = std::chrono::steady_clock::now();
  workers[6]->kill(SIGKILL);
  auto lost = std::to_string(static_cast<int>(errc::peer_lost));
  for (auto& answer : all(ranks_except({6}), "failure 6 5000"))
    EXPECT_EQ(answer.substr(0, 11 + lost.size()), "failure 6 " + lost + " ");
  EXPECT_LE(std::chrono::steady_clock::now() - start, 2 * heartbeat_timeout);

  // SIGSTOP: the socket stays open and only the missing heartbeats tell.
  start = std::chrono::steady_clock::now();
  workers[5]->kill(SIGSTOP);
  for (auto& answer : all(ranks_except({5, 6}), "failure 5 5000"))
    EXPECT_EQ(answer.substr(0, 11 + lost.size()), "failure 5 " + lost + " ");
  EXPECT_LE(std::chrono::steady_clock::now() - start, 2 * heartbeat_timeout);
  // Running again, it learns that it was lost, and why: not merely that its
  // connection to the service closed.
  workers[5]->kill(SIGCONT);
  workers[5]->send_line("failure 5 5000");
  auto told = workers[5]->read_line(line_deadline);
  ASSERT_TRUE(told);
  EXPECT_EQ(told->substr(0, 13 + lost.size()), "failure 5 " + lost + " 1 ") << *told;
  workers[5]->kill(SIGKILL);

  for (auto& answer : all(ranks_except({5, 6}), "barrier after 5000"))
    EXPECT_NE(answer.find("rank "), std::string::npos) << answer;

  for (auto r : ranks_except({5, 6})) {
    workers[r]->send_line("exit");
    auto status = workers[r]->wait_exit(line_deadline);
    ASSERT_TRUE(status) << "rank " << r << " hangs at exit";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }
}

TEST_F(cluster_test, exactly_one_of_eight_concurrent_inserts_wins) {
  int won = 0;
  int lost = 0;
  for (auto& answer : all(ranks_except({}), "insert race x")) {
    if (answer == "ok")
      ++won;
    else if (answer.find("already_exists") != std::string::npos)
      ++lost;
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(lost, world_size - 1);
}

}  // namespace
