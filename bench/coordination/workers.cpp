// coordination_bench's worker side: the echo worker of the TCP floor and the
// kv worker that answers the bench's get and barrier commands.

#include "bench/coordination/workers.hpp"

#include <array>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/system_config.hpp"
#include "bench/coordination/settings.hpp"
#include "bench/loopback.hpp"
#include "bench/proc_stats.hpp"
#include "messages/errors.hpp"

namespace lifeboat::bench::coordination_bench {

int run_echo_worker(uint16_t port) {
  auto conn = connect_loopback(port);
  if (conn.fd < 0) {
    std::perror("coordination_bench echo worker: connect");
    return 1;
  }
  std::array<char, ping_bytes> buf{};
  // The parent closing the connection (or going silent) ends the loop.
  while (transfer_all(conn.fd, buf.data(), buf.size(), false, ping_timeout) &&
         transfer_all(conn.fd, buf.data(), buf.size(), true, ping_timeout)) {
  }
  return 0;
}

int run_kv_worker(uint16_t port, int rank, int world_size) {
  quiet_logs();
  lifeboat::agent_config cfg;
  cfg.host = bench_host;
  cfg.port = port;
  cfg.rank = rank;
  cfg.world_size = world_size;
  cfg.token = bench_token;
  cfg.join_timeout = join_timeout;
  lifeboat::system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto client = lifeboat::coordination_client::connect(sys, cfg);
  if (!client) {
    std::cout << "err join: " << lifeboat::describe(client.error()) << std::endl;
    return 1;
  }
  std::vector<int32_t> participants;
  for (int32_t r = 1; r < world_size; ++r) participants.push_back(r);
  std::cout << "joined" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in{line};
    std::string cmd;
    std::string name;
    in >> cmd >> name;
    if (cmd == "get") {
      auto handle = (*client)->get_async(name, request_timeout);
      if (!handle) {
        std::cout << "err get_async: " << lifeboat::describe(handle.error()) << std::endl;
        continue;
      }
      // The service handles a connection's frames in order: once this
      // try_get is answered, the get above is registered there.
      auto fence = (*client)->try_get(fence_key);
      if (!fence) {
        (*client)->cancel(*handle);
        (*client)->wait(*handle);
        std::cout << "err fence: " << lifeboat::describe(fence.error()) << std::endl;
        continue;
      }
      std::cout << "waiting" << std::endl;
      auto value = (*client)->wait(*handle);
      auto done = steady_ns();
      if (value)
        std::cout << "got " << done << std::endl;
      else
        std::cout << "err get: " << lifeboat::describe(value.error()) << std::endl;
    } else if (cmd == "barrier") {
      auto entry = steady_ns();
      auto err = (*client)->barrier(name, request_timeout, participants);
      auto exit = steady_ns();
      if (err)
        std::cout << "err barrier: " << lifeboat::describe(err) << std::endl;
      else
        std::cout << "barrier " << entry << " " << exit << std::endl;
    } else if (cmd == "exit") {
      break;
    } else {
      std::cout << "err unknown command: " << line << std::endl;
    }
  }
  (*client)->leave();
  return 0;
}

}  // namespace lifeboat::bench::coordination_bench
