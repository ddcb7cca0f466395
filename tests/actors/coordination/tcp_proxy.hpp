#pragma once

// A TCP proxy on 127.0.0.1 for the transport tests: it forwards every
// connection it accepts to an upstream port, records all the bytes it
// forwards (what a capture on the path would see), and can flip one byte of
// what goes upstream, as an attacker on the path would.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace lifeboat::test {

class tcp_proxy {
 public:
  explicit tcp_proxy(uint16_t upstream_port);
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;
  ~tcp_proxy();

  /// The port to connect to instead of upstream; 0 when it could not listen.
  uint16_t port() const { return port_; }

  /// The next bytes forwarded upstream go with their middle byte flipped.
  void flip_next_upstream_byte() { flip_ = true; }

  /// Whether a flip was done.
  bool flipped() const { return flipped_; }

  /// Every byte forwarded so far, both directions.
  std::string recorded() const;

 private:
  void run();
  // Moves what `from` has to `to`; false when either end is gone.
  bool forward(int from, int to, bool upstream);

  uint16_t upstream_port_;
  uint16_t port_ = 0;
  int listener_ = -1;
  int stop_[2] = {-1, -1};
  std::atomic<bool> flip_{false};
  std::atomic<bool> flipped_{false};
  mutable std::mutex mtx_;
  std::string recorded_;
  std::thread thread_;
};

}  // namespace lifeboat::test
