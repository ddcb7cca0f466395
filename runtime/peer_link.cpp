#include "runtime/peer_link.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <boost/endian/conversion.hpp>

#include "actors/coordination/coordination_auth.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "messages/sigpipe_guard.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

// The peer links' protocol; a hello of another version is refused.
constexpr uint32_t peer_link_version = 1;
// Domain separation: neither end's proof is the other's, nor a worker's join.
constexpr const char* listener_proof_label = "peer-tier-listener:";
constexpr const char* connector_proof_label = "peer-tier-connector:";
// A file moves in pieces of this size.
constexpr size_t transfer_piece = size_t{4} << 20;

caf::error link_error(errc code, const std::string& peer, const std::string& what) {
  return make_error(code, "peer tier at " + peer + ": " + what);
}

caf::error socket_error(const std::string& peer, const char* op, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK)
    return link_error(errc::timeout, peer,
                      std::string{op} + ": no progress in " +
                          std::to_string(peer_link_io_timeout.count()) + " s");
  return link_error(errc::io_error, peer, std::string{op} + ": " + std::strerror(err));
}

void bound_io(int fd) {
  timeval tv{static_cast<time_t>(peer_link_io_timeout.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

peer_link::peer_link(int fd, std::string peer, std::string token)
    : fd_(fd), peer_(std::move(peer)), token_(std::move(token)) {
  bound_io(fd_);
}

peer_link::peer_link(peer_link&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      peer_(std::move(other.peer_)),
      token_(std::move(other.token_)),
      connector_nonce_(std::move(other.connector_nonce_)),
      listener_nonce_(std::move(other.listener_nonce_)),
      deadline_(other.deadline_),
      tls_(std::move(other.tls_)),
      plain_(std::move(other.plain_)),
      plain_at_(other.plain_at_) {}

peer_link& peer_link::operator=(peer_link&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    peer_ = std::move(other.peer_);
    token_ = std::move(other.token_);
    connector_nonce_ = std::move(other.connector_nonce_);
    listener_nonce_ = std::move(other.listener_nonce_);
    deadline_ = other.deadline_;
    tls_ = std::move(other.tls_);
    plain_ = std::move(other.plain_);
    plain_at_ = other.plain_at_;
  }
  return *this;
}

peer_link::~peer_link() {
  if (fd_ >= 0) ::close(fd_);
}

// 1. The connector sends its nonce (ReplicaHello).
// 2. The listener answers with its own nonce and its proof over both.
// 3. The connector checks that proof before it sends anything else; its own
//    proof (over both nonces the other way round) leads its request.
caf::expected<peer_link> peer_link::connect(const std::string& host, uint16_t port,
                                            const std::string& token,
                                            std::shared_ptr<tls_context> tls) {
  auto peer = endpoint{host, port}.to_string();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (auto rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return link_error(errc::invalid_argument, peer, std::string{"address: "} + ::gai_strerror(rc));
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(found);
    return socket_error(peer, "socket", errno);
  }
  peer_link link{fd, peer, token};
  // SO_SNDTIMEO bounds connect(2) too.
  auto rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
  auto err = errno;
  ::freeaddrinfo(found);
  if (rc != 0) return socket_error(peer, "connect", err);
  if (auto err = link.start_tls(tls)) return err;
  link.connector_nonce_ = make_join_nonce();
  wire::ReplicaHello hello;
  hello.set_version(peer_link_version);
  hello.set_nonce(link.connector_nonce_);
  if (auto err = link.send(hello)) return err;
  wire::ReplicaChallenge challenge;
  if (auto err = link.receive(challenge)) return err;
  link.listener_nonce_ = challenge.nonce();
  auto expected =
      token_mac(token, listener_proof_label + link.connector_nonce_ + challenge.nonce());
  if (challenge.nonce().size() != coordination_nonce_bytes ||
      !mac_equal(challenge.proof(), expected))
    return link_error(errc::refused, peer,
                      "it does not prove that it holds this job's LIFEBOAT_CLUSTER_TOKEN");
  return link;
}

caf::expected<peer_link> peer_link::accept(int fd, const std::string& token,
                                           std::shared_ptr<tls_context> tls) {
  peer_link link{fd, "a connecting peer", token};
  link.deadline_ = std::chrono::steady_clock::now() + peer_link_handshake_timeout;
  if (auto err = link.start_tls(tls)) return err;
  wire::ReplicaHello hello;
  if (auto err = link.receive(hello)) return err;
  if (hello.version() != peer_link_version)
    return link_error(errc::version_mismatch, link.peer_,
                      "protocol version " + std::to_string(hello.version()) +
                          ", this build speaks " + std::to_string(peer_link_version));
  if (hello.nonce().size() != coordination_nonce_bytes)
    return link_error(errc::refused, link.peer_, "a challenge of the wrong size");
  link.connector_nonce_ = hello.nonce();
  link.listener_nonce_ = make_join_nonce();
  wire::ReplicaChallenge challenge;
  challenge.set_nonce(link.listener_nonce_);
  challenge.set_proof(
      token_mac(token, listener_proof_label + hello.nonce() + link.listener_nonce_));
  if (auto err = link.send(challenge)) return err;
  return link;
}

std::string peer_link::proof() const {
  return token_mac(token_, connector_proof_label + listener_nonce_ + connector_nonce_);
}

bool peer_link::verify_proof(const std::string& proof) {
  if (!mac_equal(proof, this->proof())) return false;
  deadline_.reset();
  return true;
}

caf::error peer_link::send(const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!message.SerializeToString(&payload))
    return link_error(errc::invalid_argument, peer_, "cannot encode a message");
  std::string frame(sizeof(uint32_t), '\0');
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(frame.data()),
                               static_cast<uint32_t>(payload.size()));
  frame += payload;
  return send_bytes(frame.data(), frame.size());
}

caf::error peer_link::receive(google::protobuf::MessageLite& message) {
  unsigned char header[sizeof(uint32_t)];
  if (auto err = receive_bytes(reinterpret_cast<char*>(header), sizeof(header))) return err;
  auto size = boost::endian::load_big_u32(header);
  if (size > peer_link_max_message)
    return link_error(errc::invalid_argument, peer_,
                      "a message of " + std::to_string(size) + " bytes (at most " +
                          std::to_string(peer_link_max_message) + ")");
  std::string payload(size, '\0');
  if (auto err = receive_bytes(payload.data(), payload.size())) return err;
  if (!message.ParseFromString(payload))
    return link_error(errc::invalid_argument, peer_, "a message that does not parse");
  return {};
}

caf::error peer_link::send_file(const std::string& path, uint64_t bytes) {
  auto file = checkpoint::open_file(path, O_RDONLY);
  if (!file) return std::move(file.error());
  if (!tls_) return send_file_in_kernel(file->get(), path, bytes);
  // Through the TLS session: read and sealed piece by piece.
  std::vector<char> buffer(std::min<uint64_t>(transfer_piece, bytes));
  for (uint64_t done = 0; done < bytes;) {
    auto want = std::min<uint64_t>(buffer.size(), bytes - done);
    auto n = ::pread(file->get(), buffer.data(), want, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return checkpoint::io_error("pread", path, errno);
    if (n == 0)
      return checkpoint::corrupt_file(path, "shorter than " + std::to_string(bytes) + " bytes");
    if (auto err = send_bytes(buffer.data(), static_cast<size_t>(n))) return err;
    done += static_cast<uint64_t>(n);
  }
  return {};
}

caf::error peer_link::send_file_in_kernel(int file, const std::string& path, uint64_t bytes) {
  // sendfile(2) hands the file's pages to the socket in the kernel: no read
  // into a buffer and no copy out of it. Unlike send's MSG_NOSIGNAL, it
  // raises SIGPIPE when the peer went away, which ends a trainer's process
  // that does not ignore it: held off this thread for the call.
  sigpipe_guard guard;
  caf::error err;
  off_t offset = 0;
  while (!err && static_cast<uint64_t>(offset) < bytes) {
    auto want = std::min<uint64_t>(transfer_piece, bytes - static_cast<uint64_t>(offset));
    auto n = ::sendfile(fd_, file, &offset, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      err = errno == EIO ? checkpoint::io_error("sendfile", path, errno)
                         : socket_error(peer_, "sendfile", errno);
    else if (n == 0)
      err = checkpoint::corrupt_file(path, "shorter than " + std::to_string(bytes) + " bytes");
  }
  return err;
}

caf::error peer_link::send_memory(const char* data, uint64_t size) {
  // Piece by piece: a TLS session holds each piece's records until they
  // are sent, not the whole shard's.
  for (uint64_t done = 0; done < size;) {
    auto len = std::min<uint64_t>(transfer_piece, size - done);
    if (auto err = send_bytes(data + done, static_cast<size_t>(len))) return err;
    done += len;
  }
  return {};
}

caf::error peer_link::receive_file(checkpoint::file_system& files, const std::string& path,
                                   uint64_t bytes) {
  auto file = checkpoint::open_file(files, path, O_WRONLY | O_CREAT);
  if (!file) return std::move(file.error());
  std::vector<char> buffer(std::min<uint64_t>(transfer_piece, bytes));
  for (uint64_t done = 0; done < bytes;) {
    auto n = receive_some(buffer.data(), std::min<uint64_t>(buffer.size(), bytes - done));
    if (!n) return std::move(n.error());
    if (auto err = checkpoint::pwrite_all(files, file->get(), buffer.data(), *n,
                                          static_cast<off_t>(done), path))
      return err;
    done += *n;
  }
  if (auto err = checkpoint::check_written_size(file->get(), bytes, path)) return err;
  if (auto err = checkpoint::fsync_fd(files, file->get(), path)) return err;
  return file->close(path);
}

caf::error peer_link::start_tls(const std::shared_ptr<tls_context>& tls) {
  if (!tls) return {};
  auto made = tls_channel::make(tls);
  if (!made) return std::move(made.error());
  tls_.emplace(std::move(*made));
  return flush_tls();
}

caf::error peer_link::flush_tls() {
  auto out = tls_->take_ciphertext();
  return out.empty() ? caf::error{} : send_raw(out.data(), out.size());
}

caf::error peer_link::send_bytes(const char* data, size_t size) {
  if (!tls_) return send_raw(data, size);
  tls_->write(data, size);
  return flush_tls();
}

caf::error peer_link::receive_bytes(char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    auto n = receive_some(data + done, size - done);
    if (!n) return std::move(n.error());
    done += *n;
  }
  return {};
}

caf::expected<size_t> peer_link::receive_some(char* data, size_t size) {
  if (!tls_) return receive_raw(data, size);
  // The session's plaintext first; else more records from the socket (the
  // handshake's give none, and what they answer goes out at once).
  while (plain_at_ == plain_.size()) {
    char records[16 * 1024];
    auto n = receive_raw(records, sizeof(records));
    if (!n) return n;
    if (auto err = tls_->feed(records, *n))
      return link_error(err == make_error(errc::refused) ? errc::refused : errc::corrupt, peer_,
                        "TLS: " + describe(err));
    if (auto err = flush_tls()) return err;
    plain_ = tls_->take_plaintext();
    plain_at_ = 0;
  }
  auto n = std::min(size, plain_.size() - plain_at_);
  std::memcpy(data, plain_.data() + plain_at_, n);
  plain_at_ += n;
  return n;
}

caf::error peer_link::send_raw(const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    auto n = ::send(fd_, data + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return socket_error(peer_, "send", errno);
    done += static_cast<size_t>(n);
  }
  return {};
}

caf::expected<size_t> peer_link::receive_raw(char* data, size_t size) {
  for (;;) {
    // SO_RCVTIMEO bounds each read only: a byte now and then would renew it.
    if (deadline_ && std::chrono::steady_clock::now() > *deadline_)
      return link_error(errc::timeout, peer_,
                        "no proof of the token within " +
                            std::to_string(peer_link_handshake_timeout.count()) + " s");
    auto n = ::recv(fd_, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return socket_error(peer_, "recv", errno);
    if (n == 0) return link_error(errc::io_error, peer_, "the connection was closed");
    return static_cast<size_t>(n);
  }
}

}  // namespace lifeboat
