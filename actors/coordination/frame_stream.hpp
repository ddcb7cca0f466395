#pragma once

#include <optional>
#include <vector>

#include <caf/error.hpp>
#include <caf/io/abstract_broker.hpp>

#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/tls_channel.hpp"

namespace lifeboat {

/// One broker connection's frames, in clear text or through a tls_channel:
/// what the broker reads goes in (receive), whole frames come out (next);
/// frames to send go out through send, or wait for flush (queue). Both the
/// service and the agent use it, so neither knows whether its connection is
/// encrypted.
///
/// Bytes go out with one send(2) on the connection's socket while none of
/// the connection's bytes wait in the broker's buffer: CAF 0.17's scribe
/// registers a socket for writing and unregisters it around every write
/// (two epoll_ctl calls and a wakeup), which was a fifth of the coordination
/// service's time in a round of 1,024 workers. What the socket does not take
/// at once goes through the broker, and so does everything after it on that
/// connection (the broker's buffer keeps the order). The socket is the
/// connection handle's number in CAF 0.17's default multiplexer; a backend
/// of another kind, or a handle whose socket's peer is not the broker's,
/// leaves every byte with the broker.
///
/// Thread-safety: the broker's thread only.
class frame_stream {
 public:
  /// Clear text.
  frame_stream() = default;

  explicit frame_stream(tls_channel tls);

  /// Takes bytes read from `hdl`. What TLS has to answer (the handshake) is
  /// held but not sent: the caller takes the frames (next), answers them
  /// (send sends all) and then calls flush. An error (tls_channel::feed) is
  /// sent at once (an alert) and leaves the connection to be closed.
  caf::error receive(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                     const char* data, size_t size);

  /// The next whole frame received (frame_splitter::next).
  frame_splitter::status next(wire::Envelope& out) { return reader_.next(out); }

  /// Sends frame bytes (encode_frame) to `hdl`, encrypted when TLS is on,
  /// with whatever receive held and after whatever queue holds.
  void send(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
            const std::vector<char>& bytes);

  /// Holds frame bytes for the next flush, which sends all that were queued
  /// in one write (with TLS, in as few records as they fit). Nothing goes
  /// out before it.
  void queue(const std::vector<char>& bytes);

  /// Whether queue holds frames that no flush has sent yet.
  bool has_queued() const { return !queued_.empty(); }

  /// Sends what queue holds, what TLS produced and not yet sent (a client's
  /// first handshake bytes) and what receive held.
  void flush(caf::io::abstract_broker* self, caf::io::connection_handle hdl);

  bool encrypted() const { return tls_.has_value(); }

 private:
  // Appends what the TLS session has for the peer to held_.
  void hold_ciphertext();
  // Empties queued_ after a flush.
  void release_queued();
  // `size` bytes at `data` to the peer: on the socket, or through the broker.
  void write_out(caf::io::abstract_broker* self, caf::io::connection_handle hdl, const char* data,
                 size_t size);

  frame_splitter reader_;
  std::optional<tls_channel> tls_;
  std::vector<char> held_;    // handshake bytes receive held for the next write
  std::vector<char> queued_;  // frames (clear text) queued for the next flush
  // The connection's socket, once checked (first write); -1: the broker.
  std::optional<int> socket_;
};

/// The socket of `hdl` for frame_stream to send on, or -1: the handle's
/// number where `self`'s backend is CAF's default multiplexer and that
/// socket's peer port is the one the broker has for `hdl`.
int connection_socket(caf::io::abstract_broker* self, caf::io::connection_handle hdl);

}  // namespace lifeboat
