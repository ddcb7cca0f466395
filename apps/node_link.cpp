#include "apps/node_link.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/tls_config.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/host_resolver.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat::apps {

namespace {

using namespace std::chrono_literals;

// A launcher sends a heartbeat at least this often; one silent for the bound
// is taken for lost (its machine died or the network between them broke,
// where no connection end ever arrives). The bound is three times the
// workers' heartbeat timeout (10 s): a shorter cut fails the generation
// through the workers, who exit 3 on both sides of it, and the launchers,
// still linked once the network is back, restart it within --max-restarts;
// only a longer silence ends the job.
constexpr auto heartbeat_interval = 1s;
constexpr auto silence_bound = 30s;
// A blocked send (a peer that stopped reading) fails after this.
constexpr auto send_timeout = silence_bound;
// A peer that connected must complete its greeting within this.
constexpr auto handshake_timeout = 5s;
// Between connection attempts while node 0's launcher is not yet there.
constexpr auto connect_retry_interval = 250ms;
constexpr const char* heartbeat = "ping";
// The first line node 0 sends; a peer speaking anything else is no launcher.
constexpr const char* greeting = "lifeboat-launch-control 1";
// How node 0 answers a launcher it refuses: this, then why.
constexpr const char* refusal = "refused ";
// What a launcher is told when TLS fails: the usual cause is another setting.
const std::string tls_hint = std::string{" (every launcher needs the same "} + tls_env +
                             ", and the same LIFEBOAT_CLUSTER_TOKEN or certificate authority)";
// Domain separation: a MAC made for this channel is never a worker's join.
constexpr const char* node_proof_label = "launch-node:";
constexpr const char* node_zero_proof_label = "launch-node-zero:";

std::string hex(const std::string& bytes) {
  std::string out;
  char digits[3];
  for (unsigned char b : bytes) {
    std::snprintf(digits, sizeof(digits), "%02x", b);
    out += digits;
  }
  return out;
}

std::string proof(const std::string& token, const char* label, const std::string& nonce,
                  int node_rank, int nnodes) {
  return hex(join_mac(token, label + nonce, node_rank, nnodes, 0));
}

addrinfo* resolve(const std::string& host, uint16_t port, bool passive, std::string& error) {
  addrinfo hints{};
  // IPv4 unless the host is an IPv6 address: a name resolves to IPv4 on every
  // node alike, whatever order each node's resolver gives its addresses.
  hints.ai_family = host.find(':') == std::string::npos ? AF_INET : AF_INET6;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* out = nullptr;
  auto rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &out);
  if (rc != 0) error = "cannot resolve " + host + ": " + ::gai_strerror(rc);
  return rc == 0 ? out : nullptr;
}

// Whether `fd` (-1: none, which poll skips) becomes readable within `bound`.
bool readable_within(int fd, std::chrono::milliseconds bound) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(bound.count())) > 0 && p.revents != 0;
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval tv{std::chrono::duration_cast<std::chrono::seconds>(send_timeout).count(), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// The TLS session of a new connection under `tls`; none (clear text) when
// `tls` is null.
caf::expected<std::optional<tls_channel>> session_for(const std::shared_ptr<tls_context>& tls,
                                                      const std::string& server_name = {}) {
  if (!tls) return std::optional<tls_channel>{};
  auto made = tls_channel::make(tls, server_name);
  if (!made) return std::move(made.error());
  return std::optional<tls_channel>{std::move(*made)};
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in{line};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

node_link::node_link(int fd, int peer_node, std::optional<tls_channel> tls)
    : fd_(fd),
      peer_node_(peer_node),
      tls_(std::move(tls)),
      last_sent_(link_clock::now()),
      last_heard_(last_sent_) {
  tune(fd_);
  // A client speaks first: its ClientHello.
  send_ciphertext();
}

node_link::~node_link() { ::close(fd_); }

bool node_link::fail(std::string why) {
  if (why_.empty()) why_ = std::move(why);
  return false;
}

bool node_link::write_all(const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    auto n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string{"send: "} + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return true;
}

bool node_link::send_ciphertext() {
  if (!tls_) return true;
  auto out = tls_->take_ciphertext();
  return out.empty() || write_all(out);
}

bool node_link::send(const std::string& line) {
  if (!why_.empty()) return false;
  auto data = line + "\n";
  if (tls_) tls_->write(data.data(), data.size());
  auto sent = tls_ ? send_ciphertext() : write_all(data);
  if (!sent) return false;
  last_sent_ = link_clock::now();
  return true;
}

bool node_link::fill() {
  if (!why_.empty()) return false;
  char chunk[4096];
  for (;;) {
    auto n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n == 0) return fail("connection closed");
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0) return fail(std::string{"recv: "} + std::strerror(errno));
    last_heard_ = link_clock::now();
    if (!tls_) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    auto err = tls_->feed(chunk, static_cast<size_t>(n));
    // The handshake's answers, or the alert that tells the peer why not.
    send_ciphertext();
    if (err) {
      tls_failed_ = true;
      return fail(describe(err) + tls_hint);
    }
    buffer_ += tls_->take_plaintext();
  }
}

bool node_link::next_line(std::string& out) {
  for (auto eol = buffer_.find('\n'); eol != std::string::npos; eol = buffer_.find('\n')) {
    out = buffer_.substr(0, eol);
    buffer_.erase(0, eol + 1);
    if (out != heartbeat) return true;
  }
  return false;
}

bool node_link::receive(std::vector<std::string>& out) {
  // Lines that arrived with a handshake's last one are still buffered.
  auto ok = fill();
  for (std::string line; next_line(line);) out.push_back(std::move(line));
  return ok;
}

bool node_link::read_line(std::string& out, link_clock::time_point until) {
  for (;;) {
    if (next_line(out)) return true;
    // A refusal arrives with the end of the connection: read it first.
    auto open = fill();
    if (next_line(out)) return true;
    if (!open) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - link_clock::now());
    if (left.count() <= 0) return fail("no answer in time");
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

bool node_link::keep_alive(link_clock::time_point now) {
  using std::chrono::milliseconds;
  auto now_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
  last_heard_ += milliseconds{stall_.stalled_ms(
      now_ms, std::chrono::duration_cast<milliseconds>(heartbeat_interval).count())};
  if (now - last_heard_ > silence_bound)
    return fail(
        "silent for " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(silence_bound).count()) +
        " s");
  return now < last_sent_ + heartbeat_interval || send(heartbeat);
}

link_clock::time_point node_link::next_keep_alive() const {
  return std::min(last_sent_ + heartbeat_interval, last_heard_ + silence_bound);
}

std::variant<link_ptr, std::string> connect_to_node_zero(const std::string& host, uint16_t port,
                                                         const std::string& token, int node_rank,
                                                         const job_shape& shape, node_wait wait,
                                                         const std::function<void()>& on_wait,
                                                         const std::shared_ptr<tls_context>& tls) {
  auto until = wait.until;
  std::string error;
  auto* addresses = resolve(host, port, false, error);
  if (addresses == nullptr) return error;
  auto where = endpoint{host, port}.to_string();
  int fd = -1;
  for (bool waited = false; fd < 0;) {
    fd = ::socket(addresses->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, addresses->ai_addr, addresses->ai_addrlen) == 0) break;
    error = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (link_clock::now() + connect_retry_interval > until) {
      ::freeaddrinfo(addresses);
      return "node 0's launcher at " + where + " did not answer in time (" + error + ")";
    }
    // Node 0's launcher may simply not have started yet: say so once, retry.
    if (!waited) on_wait();
    waited = true;
    if (readable_within(wait.interrupt_fd, connect_retry_interval)) {
      ::freeaddrinfo(addresses);
      return std::string{wait_interrupted};
    }
  }
  ::freeaddrinfo(addresses);
  auto channel = session_for(tls, host);
  if (!channel) {
    ::close(fd);
    return "cannot start TLS to node 0's launcher at " + where + ": " + describe(channel.error());
  }
  auto link = std::make_unique<node_link>(fd, 0, std::move(*channel));
  auto handshake_until = std::min(until, link_clock::now() + handshake_timeout);
  std::string line;
  if (!link->read_line(line, handshake_until)) {
    // With a pre-shared key, another token fails the handshake itself.
    if (link->tls_failed())
      return "node 0's launcher at " + where + " refused this launcher: " + link->why();
    return "node 0's launcher at " + where + " did not greet: " + link->why() +
           (tls ? "" : std::string{" (if it has TLS on, set "} + tls_env + "=1 here too)");
  }
  auto greet = words(line);
  if (line.rfind(greeting, 0) != 0 || greet.size() != 3)
    return "the peer at " + where + " is no lifeboat-launch control channel";
  auto my_nonce = hex(make_join_nonce());
  auto nnodes = shape.nnodes;
  link->send("hello " + std::to_string(node_rank) + " " + std::to_string(nnodes) + " " +
             std::to_string(shape.nproc) + " " + std::to_string(shape.restart_code) + " " +
             my_nonce + " " + proof(token, node_proof_label, greet[2], node_rank, nnodes));
  if (!link->read_line(line, handshake_until))
    return "node 0's launcher at " + where + " refused this launcher: " + link->why();
  auto answer = words(line);
  if (answer.size() != 2 || answer[0] != "welcome")
    return "node 0's launcher at " + where + " refused this launcher: " +
           (line.rfind(refusal, 0) == 0 ? line.substr(std::strlen(refusal)) : line);
  if (!mac_equal(answer[1], proof(token, node_zero_proof_label, my_nonce, node_rank, nnodes)))
    return "the launcher at " + where + " does not hold this job's LIFEBOAT_CLUSTER_TOKEN";
  return link;
}

std::unique_ptr<node_listener> node_listener::listen(const std::string& host, uint16_t port,
                                                     std::string& error) {
  auto* addresses = resolve(host, port, true, error);
  if (addresses == nullptr) return nullptr;
  auto fd = ::socket(addresses->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  auto ok = fd >= 0 && ::bind(fd, addresses->ai_addr, addresses->ai_addrlen) == 0 &&
            ::listen(fd, SOMAXCONN) == 0;
  ::freeaddrinfo(addresses);
  if (!ok) {
    error = "cannot listen on " + endpoint{host, port}.to_string() + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<node_listener>(new node_listener(fd));
}

node_listener::~node_listener() { ::close(fd_); }

uint16_t node_listener::port() const { return bound_port(fd_); }

std::variant<std::vector<link_ptr>, std::string> node_listener::accept_nodes(
    const std::string& token, const job_shape& shape, node_wait wait,
    const std::shared_ptr<tls_context>& tls) {
  auto nnodes = shape.nnodes;
  std::vector<link_ptr> links(static_cast<size_t>(nnodes));
  auto missing = [&] {
    std::string out;
    for (int k = 1; k < nnodes; ++k)
      if (!links[static_cast<size_t>(k)]) out += (out.empty() ? "" : ", ") + std::to_string(k);
    return out;
  };
  for (auto joined = 0; joined < nnodes - 1;) {
    if (link_clock::now() >= wait.until)
      return "the launchers of node(s) " + missing() + " did not connect in time";
    // The launchers that joined wait for the others as well: they hear node
    // 0's heartbeats meanwhile (else each gave node 0 up after the link's
    // silence bound, 30 s, while node 0 waits up to the whole bound), and one
    // that leaves frees its place for its node's launcher started again.
    std::vector<pollfd> fds{{fd_, POLLIN, 0}, {wait.interrupt_fd, POLLIN, 0}};
    auto wake = wait.until;
    for (auto& l : links)
      if (l) {
        fds.push_back({l->fd(), POLLIN, 0});
        wake = std::min(wake, l->next_keep_alive());
      }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - link_clock::now());
    // One more millisecond: poll rounds down, and waking early only comes back here.
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(left.count() + 1, 0)));
    if (fds[1].revents != 0) return std::string{wait_interrupted};
    for (auto& l : links) {
      std::vector<std::string> lines;
      if (!l || (l->receive(lines) && l->keep_alive(link_clock::now()))) continue;
      log(log_level::warning, "launch", "node ", l->peer_node(),
          "'s launcher left before the start (", l->why(), "): its place is open again");
      l.reset();
      --joined;
    }
    if (fds[0].revents == 0) continue;
    auto fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    auto channel = session_for(tls);
    if (!channel) {
      log(log_level::warning, "launch",
          "closing a launcher's connection: ", describe(channel.error()));
      ::close(fd);
      continue;
    }
    // With TLS, the greeting waits for the peer's ClientHello and then goes
    // with the handshake's answer.
    auto link = std::make_unique<node_link>(fd, -1, std::move(*channel));
    auto nonce = hex(make_join_nonce());
    link->send(std::string{greeting} + " " + nonce);
    std::string line;
    auto hello = link->read_line(line, link_clock::now() + handshake_timeout)
                     ? words(line)
                     : std::vector<std::string>{};
    auto refuse = [&](const std::string& why) {
      link->send(refusal + why);
      log(log_level::warning, "launch", "refused a launcher: ", why);
    };
    if (hello.size() != 7 || hello[0] != "hello") {
      refuse(link->why().empty() ? "no greeting" : link->why());
      continue;
    }
    auto node = std::atoi(hello[1].c_str());
    if (hello[2] != std::to_string(nnodes)) {
      refuse("node " + hello[1] + " says --nnodes " + hello[2] + ", node 0 " +
             std::to_string(nnodes));
    } else if (node < 1 || node >= nnodes || links[static_cast<size_t>(node)]) {
      refuse("node rank " + hello[1] + " is out of range or taken");
    } else if (!mac_equal(hello[6], proof(token, node_proof_label, nonce, node, nnodes))) {
      refuse("node " + hello[1] + " does not hold this job's LIFEBOAT_CLUSTER_TOKEN");
    } else if (hello[3] != std::to_string(shape.nproc)) {
      refuse("node " + hello[1] + " says --nproc " + hello[3] + ", node 0 " +
             std::to_string(shape.nproc));
    } else if (hello[4] != std::to_string(shape.restart_code)) {
      refuse("node " + hello[1] + " says --restart-code " + hello[4] + ", node 0 " +
             std::to_string(shape.restart_code));
    } else if (link->send("welcome " +
                          proof(token, node_zero_proof_label, hello[5], node, nnodes))) {
      link->set_peer_node(node);
      links[static_cast<size_t>(node)] = std::move(link);
      ++joined;
      log(log_level::info, "launch", "node ", node, "'s launcher joined (", joined, " of ",
          nnodes - 1, ")");
    }
  }
  return links;
}

}  // namespace lifeboat::apps
