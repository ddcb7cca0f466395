#pragma once

// A cluster of step resolvers (step_resolver_state) wired by an in-memory
// bus, for the tests of the protocol and of the grace-period schedule.

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "actors/preemption/step_resolver_state.hpp"

namespace lifeboat::test {

constexpr int64_t t0 = 1'000'000;  // a fixed "now" in unix ms

// A cluster of step resolvers wired by an in-memory bus: what one sends, the
// addressees receive in order. Each worker has a gate whose trainer is
// simulated by setting its completed step.
struct cluster {
  struct worker {
    std::atomic<int64_t> completed{0};
    std::atomic<int64_t> action{step_gate::no_step};
    step_gate gate{completed, action};
    published_phase board;  // what the worker's heartbeats would carry
    std::unique_ptr<step_resolver_state> logic;
  };

  struct sent {
    int32_t from;
    outgoing out;
  };

  std::vector<std::unique_ptr<worker>> workers;
  std::deque<sent> in_flight;
  int64_t now = t0;

  cluster(int n, int64_t grace_ms, double safety = 2.0, int64_t backup_ms = 0) {
    for (int r = 0; r < n; ++r) {
      auto w = std::make_unique<worker>();
      w->logic = std::make_unique<step_resolver_state>(
          step_resolver_state::config{r, n, grace_ms, safety, backup_ms, &w->board}, w->gate);
      workers.push_back(std::move(w));
    }
  }

  step_resolver_state& at(int r) { return *workers[r]->logic; }

  void post(int32_t from, std::vector<outgoing> out) {
    for (auto& m : out) in_flight.push_back({from, std::move(m)});
  }

  // Delivers until quiet, letting `before_delivery` play the trainers.
  void run(const std::function<void(const outgoing&)>& before_delivery = {}) {
    while (!in_flight.empty()) {
      auto msg = std::move(in_flight.front());
      in_flight.pop_front();
      if (before_delivery) before_delivery(msg.out);
      for (int32_t r = 0; r < static_cast<int32_t>(workers.size()); ++r)
        if (addressed_to(msg.out.to, r, msg.from)) post(r, at(r).on_message(msg.out.message, now));
    }
  }

  wire::Notice notice(int64_t deadline) {
    wire::Notice n;
    n.set_source("test");
    n.set_deadline_unix_ms(deadline);
    return n;
  }
};

}  // namespace lifeboat::test
