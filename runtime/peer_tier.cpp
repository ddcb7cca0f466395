#include "runtime/peer_tier.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/background_thread.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/host_resolver.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

constexpr const char* component = "checkpoint";

// A fetched index is read whole into memory before it is checked: it holds
// the buffer table and a checksum per 8 MiB chunk (about 1 MiB for a 1 TiB
// shard), far less than this.
constexpr uint64_t max_index_bytes = uint64_t{64} << 20;

// Both files of a shard, index first, into `into` (a step being adopted).
caf::error receive_shard(peer_link& link, checkpoint::file_system& files,
                         const checkpoint::memory_tier::shard_files& into, uint64_t index_bytes,
                         uint64_t data_bytes) {
  if (auto err = link.receive_file(files, into.index, index_bytes)) return err;
  return link.receive_file(files, into.data, data_bytes);
}

// `data`: the data file's bytes in memory, or empty. Without TLS the file
// goes out in the kernel (sendfile: the socket takes the file's pages, with
// a fifth of the CPU of a read and a send of the same bytes); a TLS session
// seals `data` where it has the file's size, which spares reading it back.
// The peer reads the file's pages as they are when it reads them, not when
// sendfile returned; a committed step's files are not written again while a
// copy is in flight (a push ends with the holder's answer, and a replica is
// replaced only by its own rank's next push), and the reader checks every
// chunk in any case.
caf::error send_shard(peer_link& link, const checkpoint::memory_tier::shard_files& from,
                      uint64_t index_bytes, uint64_t data_bytes, std::string_view data = {}) {
  if (auto err = link.send_file(from.index, index_bytes)) return err;
  if (link.encrypted() && data.size() == data_bytes && !data.empty())
    return link.send_memory(data.data(), data_bytes);
  return link.send_file(from.data, data_bytes);
}

// Whether a peer's file sizes can be added up and held: their sum is what a
// memory tier makes room for (far less than this in any real job).
bool plausible_sizes(uint64_t index_bytes, uint64_t data_bytes) {
  constexpr uint64_t limit = uint64_t{1} << 60;
  return index_bytes <= limit && data_bytes <= limit;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::optional<int> replica_holder(const std::vector<std::string>& hosts, int rank) {
  auto world = static_cast<int>(hosts.size());
  if (rank < 0 || rank >= world) return std::nullopt;
  const auto& own = hosts[static_cast<size_t>(rank)];
  if (own.empty()) return std::nullopt;
  std::optional<int> same_host;
  for (int step = 1; step < world; ++step) {
    auto other = (rank + step) % world;
    const auto& host = hosts[static_cast<size_t>(other)];
    if (host.empty()) continue;
    if (host != own) return other;
    if (!same_host) same_host = other;
  }
  return same_host;
}

caf::expected<std::string> local_address_toward(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (auto rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return make_error(errc::invalid_argument, "cannot resolve " + host + ": " + ::gai_strerror(rc));
  checkpoint::unique_fd fd{::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  // A UDP connect only picks the route: no packet leaves.
  auto rc = fd.get() < 0 ? -1 : ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  auto err = errno;
  ::freeaddrinfo(found);
  if (rc != 0) return make_error(errc::io_error, "no route to " + host + ": " + std::strerror(err));
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return make_error(errc::io_error, std::string{"getsockname: "} + std::strerror(errno));
  char text[INET6_ADDRSTRLEN] = {};
  const void* addr =
      local.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  ::inet_ntop(local.ss_family, addr, text, sizeof(text));
  return std::string{text};
}

caf::expected<std::unique_ptr<replica_server>> replica_server::start(config cfg) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* found = nullptr;
  if (auto rc = ::getaddrinfo(cfg.host.c_str(), "0", &hints, &found); rc != 0)
    return make_error(errc::invalid_argument,
                      "peer tier: cannot listen on " + cfg.host + ": " + ::gai_strerror(rc));
  checkpoint::unique_fd fd{::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  auto rc = fd.get() < 0 ? -1 : ::bind(fd.get(), found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0 || ::listen(fd.get(), max_connections) != 0)
    return make_error(errc::io_error,
                      "peer tier: cannot listen on " + cfg.host + ": " + std::strerror(errno));
  auto port = bound_port(fd.get());
  std::unique_ptr<replica_server> server{new replica_server(std::move(cfg), fd.release(), port)};
  if (::pipe2(server->wake_, O_CLOEXEC) != 0)
    return make_error(errc::io_error, std::string{"peer tier: pipe: "} + std::strerror(errno));
  server->acceptor_ = background_thread([s = server.get()] { s->accept_loop(); });
  return server;
}

replica_server::replica_server(config cfg, int listener, uint16_t port)
    : cfg_(std::move(cfg)), listener_(listener), port_(port) {}

replica_server::~replica_server() {
  if (acceptor_.joinable()) {
    char stop = 1;
    while (::write(wake_[1], &stop, 1) < 0 && errno == EINTR) {
    }
    acceptor_.join();
  }
  {
    // A connection blocked in a read or a write ends at once.
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [id, c] : connections_)
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
  }
  // No thread starts any more: the map changes only here.
  for (auto& [id, c] : connections_) c.thread.join();
  for (int fd : {listener_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

void replica_server::reap() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (int id : ended_) {
      auto found = connections_.find(id);
      done.push_back(std::move(found->second.thread));
      connections_.erase(found);
    }
    ended_.clear();
  }
  for (auto& t : done) t.join();
}

void replica_server::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log(log_level::error, component, "peer tier: poll: ", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    reap();
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> guard{mtx_};
    if (connections_.size() >= static_cast<size_t>(max_connections)) {
      log(log_level::warning, component, "peer tier: ", max_connections,
          " connections open already: one more closed");
      ::close(fd);
      continue;
    }
    auto id = next_id_++;
    // The link reads and writes a duplicate of the socket and closes it;
    // `fd` stays open until the thread ends, under the lock, so that the
    // destructor's shutdown never reaches a descriptor that was reused.
    connections_[id] = connection{fd, background_thread([this, id, fd] {
                                    serve(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
                                    std::lock_guard<std::mutex> done{mtx_};
                                    ::close(fd);
                                    connections_[id].fd = -1;
                                    ended_.push_back(id);
                                  })};
  }
}

void replica_server::serve(int fd) {
  auto link = peer_link::accept(fd, cfg_.token, cfg_.tls);
  auto err = link ? answer(*link) : link.error();
  if (err) log(log_level::warning, component, "peer tier: a connection ended: ", describe(err));
}

caf::error replica_server::answer(peer_link& link) {
  wire::ReplicaRequest request;
  if (auto err = link.receive(request)) return err;
  if (!link.verify_proof(request.proof()))
    return make_error(errc::refused,
                      "a peer that does not hold this job's LIFEBOAT_CLUSTER_TOKEN was refused");
  wire::ReplicaReply reply;
  auto rank = request.rank();
  if (request.world_size() != cfg_.world_size || !cfg_.holds(rank)) {
    reply.set_error("this worker does not hold the replicas of rank " + std::to_string(rank) +
                    " of " + std::to_string(request.world_size()));
    return link.send(reply);
  }
  auto tier = replicas_of(rank);
  if (!tier) {
    reply.set_error(describe(tier.error()));
    return link.send(reply);
  }
  std::mutex* turn = nullptr;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    turn = &turn_of(rank);
  }
  std::lock_guard<std::mutex> mine{*turn};
  if (request.kind() == wire::REPLICA_PUSH) return take_push(link, request, **tier);
  if (request.kind() == wire::REPLICA_FETCH) return answer_fetch(link, request, **tier);
  if (request.kind() == wire::REPLICA_SPARE) return prepare_spare(link, request, **tier);
  reply.set_error("a request of unknown kind " + std::to_string(request.kind()));
  return link.send(reply);
}

// 1. The go-ahead (a push that would be refused is told so before its bytes
//    are on their way), 2. the files, adopted, 3. the commit's outcome.
caf::error replica_server::take_push(peer_link& link, const wire::ReplicaRequest& request,
                                     checkpoint::memory_tier& replicas) {
  wire::ReplicaReply reply;
  reply.set_step(request.step());
  if (request.step() < 0 || !plausible_sizes(request.index_bytes(), request.data_bytes())) {
    reply.set_error("a push of step " + std::to_string(request.step()) + " with " +
                    std::to_string(request.index_bytes()) + " + " +
                    std::to_string(request.data_bytes()) + " bytes");
    return link.send(reply);
  }
  reply.set_found(true);
  if (auto err = link.send(reply)) return err;
  auto adopted =
      replicas.adopt(request.step(), request.total_run_calls(), request.index_bytes(),
                     request.data_bytes(), [&](const checkpoint::memory_tier::shard_files& into) {
                       return receive_shard(link, replicas.files(), into, request.index_bytes(),
                                            request.data_bytes());
                     });
  reply.set_found(static_cast<bool>(adopted));
  if (!adopted) reply.set_error(describe(adopted.error()));
  if (auto err = link.send(reply)) return err;
  return adopted ? caf::error{} : adopted.error();
}

caf::error replica_server::prepare_spare(peer_link& link, const wire::ReplicaRequest& request,
                                         checkpoint::memory_tier& replicas) {
  wire::ReplicaReply reply;
  auto prepared = plausible_sizes(0, request.data_bytes())
                      ? replicas.prepare_spare(request.data_bytes())
                      : make_error(errc::invalid_argument,
                                   "a spare of " + std::to_string(request.data_bytes()) + " bytes");
  reply.set_found(!prepared);
  if (prepared) reply.set_error(describe(prepared));
  return link.send(reply);
}

// The newest step in the range asked for, with its sizes, then its files;
// an empty reply when there is none.
caf::error replica_server::answer_fetch(peer_link& link, const wire::ReplicaRequest& request,
                                        const checkpoint::memory_tier& replicas) {
  wire::ReplicaReply reply;
  std::optional<int64_t> max_step;
  if (request.step() >= 0) max_step = request.step();
  auto step = replicas.newest_step(max_step);
  if (!step || *step < request.min_step()) return link.send(reply);
  auto files = replicas.files_of(*step);
  auto index_bytes = checkpoint::file_size(files.index);
  auto data_bytes = checkpoint::file_size(files.data);
  auto manifest = checkpoint::read_manifest(
      checkpoint::join_path(replicas.path(), checkpoint::step_dir_name(*step)), *step);
  if (!index_bytes || !data_bytes || !manifest) {
    reply.set_error(describe(!index_bytes  ? index_bytes.error()
                             : !data_bytes ? data_bytes.error()
                                           : manifest.error()));
    return link.send(reply);
  }
  reply.set_found(true);
  reply.set_step(*step);
  reply.set_total_run_calls(manifest->total_run_calls());
  reply.set_index_bytes(*index_bytes);
  reply.set_data_bytes(*data_bytes);
  if (auto err = link.send(reply)) return err;
  return send_shard(link, files, *index_bytes, *data_bytes);
}

caf::expected<checkpoint::memory_tier*> replica_server::replicas_of(int rank) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto found = replicas_.find(rank);
  if (found != replicas_.end()) return &found->second;
  auto opened = checkpoint::memory_tier::open(cfg_.dir, rank, cfg_.world_size);
  if (!opened) return std::move(opened.error());
  return &replicas_.emplace(rank, std::move(*opened)).first->second;
}

caf::error replica_server::remove_replicas() {
  // Also those of an earlier generation that this one never touched.
  for (int rank = 0; rank < cfg_.world_size; ++rank)
    if (cfg_.holds(rank))
      if (auto tier = replicas_of(rank); !tier) return std::move(tier.error());
  // Each rank's turn: a push or fetch in progress ends first. The tiers
  // stay open (a connection may hold one): a later push makes its directory
  // again.
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [rank, tier] : replicas_) {
    std::lock_guard<std::mutex> turn{turn_of(rank)};
    if (auto err = tier.remove()) return err;
  }
  return {};
}

std::mutex& replica_server::turn_of(int rank) {
  auto& slot = turns_[rank];
  if (!slot) slot = std::make_unique<std::mutex>();
  return *slot;
}

replica_client::replica_client(std::string holder_host, uint16_t holder_port, std::string token,
                               int rank, int world_size, std::shared_ptr<tls_context> tls)
    : host_(std::move(holder_host)),
      port_(holder_port),
      token_(std::move(token)),
      rank_(rank),
      world_size_(world_size),
      tls_(std::move(tls)) {}

std::string replica_client::holder() const { return endpoint{host_, port_}.to_string(); }

caf::expected<peer_link> replica_client::send_request(wire::ReplicaRequest& request) {
  auto link = peer_link::connect(host_, port_, token_, tls_);
  if (!link) return link;
  request.set_proof(link->proof());
  request.set_rank(rank_);
  request.set_world_size(world_size_);
  if (auto err = link->send(request)) return err;
  return link;
}

caf::error replica_client::receive_consent(peer_link& link) {
  wire::ReplicaReply reply;
  if (auto err = link.receive(reply)) return err;
  if (!reply.found())
    return make_error(errc::unavailable, "peer tier at " + holder() + ": " + reply.error());
  return {};
}

caf::expected<double> replica_client::push(const checkpoint::memory_tier& own, int64_t step,
                                           int64_t total_run_calls, std::string_view data) {
  auto start = std::chrono::steady_clock::now();
  auto files = own.files_of(step);
  auto index_bytes = checkpoint::file_size(files.index);
  if (!index_bytes) return std::move(index_bytes.error());
  auto data_bytes = checkpoint::file_size(files.data);
  if (!data_bytes) return std::move(data_bytes.error());
  wire::ReplicaRequest request;
  request.set_kind(wire::REPLICA_PUSH);
  request.set_step(step);
  request.set_total_run_calls(total_run_calls);
  request.set_index_bytes(*index_bytes);
  request.set_data_bytes(*data_bytes);
  auto link = send_request(request);
  if (!link) return std::move(link.error());
  // 1. The go-ahead, 2. the files, 3. the holder's commit.
  if (auto err = receive_consent(*link)) return err;
  if (auto err = send_shard(*link, files, *index_bytes, *data_bytes, data)) return err;
  if (auto err = receive_consent(*link)) return err;
  return seconds_since(start);
}

caf::error replica_client::prepare_spare(uint64_t data_bytes) {
  wire::ReplicaRequest request;
  request.set_kind(wire::REPLICA_SPARE);
  request.set_data_bytes(data_bytes);
  auto link = send_request(request);
  if (!link) return std::move(link.error());
  return receive_consent(*link);
}

caf::expected<std::optional<checkpoint::checkpoint_info>> replica_client::fetch(
    checkpoint::state_registry& registry, checkpoint::staging_pool& pool,
    std::optional<int64_t> max_step, int64_t min_step, checkpoint::peer_fetch_progress& progress) {
  using result = std::optional<checkpoint::checkpoint_info>;
  auto start = std::chrono::steady_clock::now();
  wire::ReplicaRequest request;
  request.set_kind(wire::REPLICA_FETCH);
  request.set_step(max_step.value_or(-1));
  request.set_min_step(min_step);
  auto link = send_request(request);
  if (!link) return std::move(link.error());
  wire::ReplicaReply reply;
  if (auto err = link->receive(reply)) return err;
  if (!reply.error().empty())
    return make_error(errc::unavailable, "peer tier at " + holder() + ": " + reply.error());
  if (!reply.found()) return result{};
  if (reply.step() < min_step || (max_step && reply.step() > *max_step) || reply.step() < 0 ||
      !plausible_sizes(reply.index_bytes(), reply.data_bytes()) ||
      reply.index_bytes() > max_index_bytes)
    return make_error(errc::invalid_argument,
                      "peer tier at " + holder() + ": step " + std::to_string(reply.step()) +
                          " of " + std::to_string(reply.index_bytes()) + " + " +
                          std::to_string(reply.data_bytes()) + " bytes was not asked for");
  // 1. The index, whole: its frame's checksum, then its fit to this rank and
  // the registry. 2. The data, straight into the registered buffers.
  progress.step = reply.step();
  auto step_dir = holder() + ":" + checkpoint::step_dir_name(reply.step());
  std::string index_bytes(static_cast<size_t>(reply.index_bytes()), '\0');
  if (auto err = link->receive_bytes(index_bytes.data(), index_bytes.size())) return err;
  wire::ShardIndex index;
  // Named as the holder keeps it: a memory tier's shard is rank 0 of 1.
  auto index_name = step_dir + "/" + checkpoint::shard_index_name(0, 1);
  if (auto err = checkpoint::decode_framed(checkpoint::index_magic, index_bytes, index_name, index))
    return err;
  // Its index names step and size, not the job's rank.
  if (index.step() != reply.step() ||
      index.data_bytes() != static_cast<int64_t>(reply.data_bytes()))
    return checkpoint::corrupt_file(
        index_name, "is the index of step " + std::to_string(index.step()) + " with " +
                        std::to_string(index.data_bytes()) + " bytes, not of step " +
                        std::to_string(reply.step()) + " with " +
                        std::to_string(reply.data_bytes()));
  if (auto err = checkpoint::check_buffer_table(index, registry)) return err;
  auto data_name = step_dir + "/" + index.data_file();
  if (auto err = checkpoint::load_shard_from_stream(
          data_name, index, registry, pool, progress.touched,
          [&](char* data, size_t size) { return link->receive_bytes(data, size); }))
    return err;
  checkpoint::checkpoint_info info;
  info.step = reply.step();
  info.total_run_calls = reply.total_run_calls();
  info.path = step_dir;
  info.bytes = index.data_bytes();
  info.seconds = seconds_since(start);
  info.tiers = {{checkpoint::tier_peer, info.seconds}};
  return result{std::move(info)};
}

}  // namespace lifeboat
