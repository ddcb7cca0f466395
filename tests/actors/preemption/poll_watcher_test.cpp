// The poll watcher with real pollers (threads) and scripted notice sources:
// which notices reach the resolver, and which sources acknowledge when the
// runtime asks, before the answer comes.
#include "actors/preemption/poll_watcher.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/system_config.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/notice_source.hpp"
#include "tests/support/actor_probe.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

constexpr auto poll_interval = 2ms;
using test::wait_bound;

// What a scripted source reports, and what was done to it; shared between
// the test and the source, which its poller owns and calls on its thread.
struct script {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::string> notices;  // Notice.source reported from the n-th poll on
  int64_t polls = 0;
  int64_t acknowledged = 0;

  // Waits until the source has been polled `more` times after now: every
  // notice of an earlier poll has then been sent to the watcher, and an
  // acknowledgement requested before now has been carried out (a poller
  // acknowledges before it polls).
  bool await_polls(int64_t more) {
    std::unique_lock<std::mutex> lock{mtx};
    auto target = polls + more;
    return cv.wait_for(lock, wait_bound, [&] { return polls >= target; });
  }

  bool await_acknowledged() {
    std::unique_lock<std::mutex> lock{mtx};
    return cv.wait_for(lock, wait_bound, [&] { return acknowledged > 0; });
  }

  int64_t acknowledgements() {
    std::lock_guard<std::mutex> guard{mtx};
    return acknowledged;
  }
};

class scripted_source : public notice_source {
 public:
  scripted_source(std::string name, std::shared_ptr<script> s)
      : name_(std::move(name)), script_(std::move(s)) {}

  std::string name() const override { return name_; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds) override {
    std::lock_guard<std::mutex> guard{script_->mtx};
    auto n = script_->polls++;
    script_->cv.notify_all();
    if (script_->notices.empty()) return std::optional<notice>{};
    // The n-th poll reports the n-th notice, the last one from then on.
    auto i = std::min<size_t>(static_cast<size_t>(n), script_->notices.size() - 1);
    return std::optional<notice>{notice{script_->notices[i], "scripted", 0}};
  }

  void acknowledge() override {
    std::lock_guard<std::mutex> guard{script_->mtx};
    ++script_->acknowledged;
    script_->cv.notify_all();
  }

 private:
  std::string name_;
  std::shared_ptr<script> script_;
};

class poll_watcher_test : public ::testing::Test {
 protected:
  // A round trip to the watcher: what was sent to it before has been handled.
  std::string status_of(const poll_watcher_actor& watcher) {
    return test::status_of(driver_, watcher).state();
  }

  // A watcher over one scripted source per name; `resolver_` stands in for
  // the step resolver.
  poll_watcher_actor spawn_watcher(
      const std::vector<std::pair<std::string, std::shared_ptr<script>>>& s) {
    std::vector<notice_source_ptr> sources;
    for (auto& [name, sc] : s) sources.push_back(std::make_unique<scripted_source>(name, sc));
    auto watcher = sys_.spawn(poll_watcher, &sources, std::chrono::milliseconds{poll_interval},
                              caf::actor{resolver_});
    // The watcher takes `sources` when it initialises, on a scheduler thread
    // after spawn returned; it answers only once it has.
    status_of(watcher);
    return watcher;
  }

  // The Notice.source of every notice the resolver has received so far.
  std::vector<std::string> forwarded() {
    std::vector<std::string> out;
    test::take_held(resolver_,
                    [&](notice_atom, const wire::Notice& n) { out.push_back(n.source()); });
    return out;
  }

  std::string notice_from_resolver() {
    std::string source;
    resolver_->receive([&](notice_atom, const wire::Notice& n) { source = n.source(); },
                       caf::after(wait_bound) >> [] {});
    return source;
  }

  system_config cfg_;
  caf::actor_system sys_{cfg_};
  caf::scoped_actor resolver_{sys_};
  caf::scoped_actor driver_{sys_};
};

TEST_F(poll_watcher_test, each_notice_reaches_the_resolver_once_and_a_new_one_again) {
  auto gce = std::make_shared<script>();
  auto aws = std::make_shared<script>();
  gce->notices = {"gce:maintenance-event"};
  // A rebalance recommendation first, then the interruption itself.
  aws->notices = {"aws:rebalance", "aws:rebalance", "aws:spot-interruption"};
  auto watcher = spawn_watcher({{"gce", gce}, {"aws-rebalance", aws}});
  ASSERT_TRUE(gce->await_polls(5));
  ASSERT_TRUE(aws->await_polls(5));
  EXPECT_EQ(status_of(watcher), "notified");
  auto got = forwarded();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"aws:rebalance", "aws:spot-interruption",
                                           "gce:maintenance-event"}));
  driver_->send_exit(watcher, caf::exit_reason::user_shutdown);
}

// The peers parse a notice as a protobuf message, whose strings must be
// UTF-8: a trigger file's path in Latin-1 is mended, or no peer would see it.
TEST_F(poll_watcher_test, a_notice_whose_text_is_not_utf8_is_forwarded_mended) {
  auto file = std::make_shared<script>();
  file->notices = {"file:/run/caf\xE9"};
  auto watcher = spawn_watcher({{"file", file}});
  EXPECT_EQ(notice_from_resolver(), "file:/run/caf\xEF\xBF\xBD");
  driver_->send_exit(watcher, caf::exit_reason::user_shutdown);
}

TEST_F(poll_watcher_test, acknowledging_waits_for_the_sources_that_gave_a_notice) {
  auto azure = std::make_shared<script>();
  auto gce = std::make_shared<script>();
  // The notice names the event, not the source spec the poller is named by.
  azure->notices = {"azure:Preempt"};
  auto watcher = spawn_watcher({{"azure", azure}, {"gce", gce}});
  ASSERT_EQ(notice_from_resolver(), "azure:Preempt");
  bool answered = false;
  driver_->request(watcher, wait_bound, acknowledge_atom::value)
      .receive(
          [&] {
            answered = true;
            EXPECT_EQ(azure->acknowledgements(), 1);
          },
          [](caf::error& err) { FAIL() << caf::to_string(err); });
  EXPECT_TRUE(answered);
  // A source without a notice has nothing to acknowledge.
  ASSERT_TRUE(gce->await_polls(2));
  EXPECT_EQ(gce->acknowledgements(), 0);
  driver_->send_exit(watcher, caf::exit_reason::user_shutdown);
}

TEST_F(poll_watcher_test, without_a_notice_acknowledging_is_answered_at_once) {
  auto gce = std::make_shared<script>();
  auto watcher = spawn_watcher({{"gce", gce}});
  bool answered = false;
  driver_->request(watcher, wait_bound, acknowledge_atom::value)
      .receive([&] { answered = true; }, [](caf::error& err) { FAIL() << caf::to_string(err); });
  EXPECT_TRUE(answered);
  ASSERT_TRUE(gce->await_polls(2));
  EXPECT_EQ(gce->acknowledgements(), 0);
  driver_->send_exit(watcher, caf::exit_reason::user_shutdown);
}

TEST_F(poll_watcher_test, without_sources_it_is_idle) {
  auto watcher = spawn_watcher({});
  EXPECT_EQ(status_of(watcher), "idle");
  driver_->send_exit(watcher, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace lifeboat
