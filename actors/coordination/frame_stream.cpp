#include "actors/coordination/frame_stream.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

#include <caf/io/network/default_multiplexer.hpp>

namespace lifeboat {

namespace {

constexpr size_t kept_queue_capacity = 64 * 1024;

}  // namespace

int connection_socket(caf::io::abstract_broker* self, caf::io::connection_handle hdl) {
  if (dynamic_cast<caf::io::network::default_multiplexer*>(&self->backend()) == nullptr) return -1;
  auto fd = static_cast<int>(hdl.id());
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return -1;
  uint16_t port = 0;
  if (peer.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port);
  else if (peer.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_port);
  return port != 0 && port == self->remote_port(hdl) ? fd : -1;
}

frame_stream::frame_stream(tls_channel tls) : tls_(std::move(tls)) {}

caf::error frame_stream::receive(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                                 const char* data, size_t size) {
  if (!tls_) {
    reader_.append(data, size);
    return caf::none;
  }
  auto err = tls_->feed(data, size);
  // A handshake answer goes out even when what came in ends the session: a
  // TLS alert tells the peer why. Otherwise it is held for what the caller
  // answers to the frames (the client's Finished and its join share one
  // write, and wake the service once), or for flush.
  if (err) {
    flush(self, hdl);
    return err;
  }
  hold_ciphertext();
  auto plain = tls_->take_plaintext();
  reader_.append(plain.data(), plain.size());
  return caf::none;
}

void frame_stream::send(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                        const std::vector<char>& bytes) {
  if (has_queued()) {
    queue(bytes);
    flush(self, hdl);
    return;
  }
  if (!tls_) {
    write_out(self, hdl, bytes.data(), bytes.size());
    return;
  }
  tls_->write(bytes.data(), bytes.size());
  flush(self, hdl);
}

void frame_stream::hold_ciphertext() {
  auto out = tls_->take_ciphertext();
  held_.insert(held_.end(), out.begin(), out.end());
}

void frame_stream::queue(const std::vector<char>& bytes) {
  queued_.insert(queued_.end(), bytes.begin(), bytes.end());
}

// The capacity stays for the next batch, unless one batch (the reports of
// a whole cluster to its leader) made it large.
void frame_stream::release_queued() {
  if (queued_.capacity() > kept_queue_capacity)
    queued_ = {};
  else
    queued_.clear();
}

void frame_stream::flush(caf::io::abstract_broker* self, caf::io::connection_handle hdl) {
  if (!tls_) {
    if (!has_queued()) return;
    write_out(self, hdl, queued_.data(), queued_.size());
    release_queued();
    return;
  }
  if (has_queued()) {
    tls_->write(queued_.data(), queued_.size());
    release_queued();
  }
  hold_ciphertext();
  if (held_.empty()) return;
  write_out(self, hdl, held_.data(), held_.size());
  held_.clear();
}

void frame_stream::write_out(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                             const char* data, size_t size) {
  if (!socket_) socket_ = connection_socket(self, hdl);
  if (*socket_ >= 0) {
    ssize_t sent;
    do {
      sent = ::send(*socket_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent == static_cast<ssize_t>(size)) return;
    // A full socket, or a broken one: the rest, and all after it, through
    // the broker, which finds a broken connection and reports it closed.
    if (sent > 0) {
      data += sent;
      size -= static_cast<size_t>(sent);
    }
    socket_ = -1;
  }
  self->write(hdl, size, data);
  self->flush(hdl);
}

}  // namespace lifeboat
