#pragma once

// Hosts of their own for the multi-node tests and benchmark: network
// namespaces 10.77.0.1 .. 10.77.0.N/24, each with a veth pair whose other end
// is a port of a bridge in one more namespace, so that launchers and workers
// in them reach one another only over that network, as on separate machines.
// Creating them needs root (CAP_NET_ADMIN): where that fails, ok() is false
// and the caller skips. No packet leaves the namespaces, and everything is
// removed with the object. Not thread-safe; one object per test.

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/node_launch.hpp"

namespace lifeboat::test {

/// child_process runs a path, not a name looked up in PATH.
constexpr const char* ip_command = "/usr/sbin/ip";

/// A TCP sender backs its retransmissions off to at most 1 s while a link is
/// cut (Linux 6.15's net.ipv4.tcp_rto_max_ms; the default is 120 s), so that a
/// connection that outlived a cut carries data again soon after the link is
/// back instead of at the next doubled timeout. The kernel gives a connection
/// up after tcp_retries2 retransmissions' worth of that backoff: 60 of them
/// keep it for about a minute (15, the default, would end it after about 13 s,
/// before a test has seen the cut's effects and restored the link).
constexpr const char* retransmission_settings =
    "net.ipv4.tcp_rto_max_ms=1000 net.ipv4.tcp_retries2=60";

class network_namespaces {
 public:
  explicit network_namespaces(int hosts)
      : hosts_(hosts), prefix_("lb" + std::to_string(::getpid() % 100000)) {
    ok_ = ::access(ip_command, X_OK) == 0 && run("ip netns add " + bridge()) &&
          run("ip -n " + bridge() + " link add br0 type bridge") &&
          run("ip -n " + bridge() + " link set br0 up");
    for (int k = 0; ok_ && k < hosts_; ++k) {
      ok_ = run("ip netns add " + host(k)) &&
            run("ip -n " + host(k) + " link add eth0 type veth peer name " + port(k) + " netns " +
                bridge()) &&
            run("ip -n " + host(k) + " addr add " + address(k) + "/24 dev eth0") &&
            run("ip -n " + host(k) + " link set eth0 up") &&
            run("ip -n " + host(k) + " link set lo up") &&
            run("ip -n " + bridge() + " link set " + port(k) + " master br0") &&
            run("ip -n " + bridge() + " link set " + port(k) + " up");
      // Older kernels lack the setting; the cut tests then rely on the
      // default backoff.
      run("ip netns exec " + host(k) + " sysctl -qw " + retransmission_settings);
    }
  }
  ~network_namespaces() {
    for (int k = 0; k < hosts_; ++k) run("ip netns del " + host(k));
    run("ip netns del " + bridge());
  }
  network_namespaces(const network_namespaces&) = delete;
  network_namespaces& operator=(const network_namespaces&) = delete;

  bool ok() const { return ok_; }
  std::string host(int k) const { return prefix_ + "n" + std::to_string(k); }
  static std::string address(int k) { return "10.77.0." + std::to_string(k + 1); }

  /// `argv` run inside host k's namespace (ip netns exec replaces itself with
  /// the command, so the child's pid is the command's).
  std::vector<std::string> in_host(int k, const std::vector<std::string>& argv) const {
    std::vector<std::string> out{ip_command, "netns", "exec", host(k)};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  /// The argv of node k's `launch` (lifeboat-launch) of a job of `nodes`
  /// nodes with `per_node` workers each, in host k, node 0's service on host
  /// 0's address at `service_port`: `flags` go before "--", `command` after.
  std::vector<std::string> launcher(const std::string& launch, int k, int nodes, int per_node,
                                    const std::string& service_port,
                                    const std::string& control_port,
                                    const std::vector<std::string>& flags,
                                    const std::vector<std::string>& command) const {
    auto argv =
        node_launch_args(launch, nodes, k, address(0) + ":" + service_port, control_port, per_node);
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return in_host(k, argv);
  }

  /// Cuts host k off (its bridge port down: its own interface stays up but
  /// loses the carrier, so its sockets see no error, only silence), or joins
  /// it again. True when `ip` did it.
  bool cut(int k) { return run("ip -n " + bridge() + " link set " + port(k) + " down"); }
  bool restore(int k) { return run("ip -n " + bridge() + " link set " + port(k) + " up"); }

 private:
  static bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }
  std::string bridge() const { return prefix_ + "br"; }
  std::string port(int k) const { return prefix_ + "v" + std::to_string(k); }

  int hosts_;
  std::string prefix_;
  bool ok_ = false;
};

}  // namespace lifeboat::test
