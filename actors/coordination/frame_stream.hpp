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
/// frames to send go out through send. Both the service and the agent use
/// it, so neither knows whether its connection is encrypted.
class frame_stream {
 public:
  /// Clear text.
  frame_stream() = default;

  explicit frame_stream(tls_channel tls);

  /// Takes bytes read from `hdl`. What TLS has to answer (the handshake) is
  /// written to `hdl` but not flushed: the caller takes the frames (next),
  /// answers them (send flushes all) and then calls flush. An error
  /// (tls_channel::feed) is flushed at once (an alert) and leaves the
  /// connection to be closed.
  caf::error receive(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                     const char* data, size_t size);

  /// The next whole frame received (frame_splitter::next).
  frame_splitter::status next(wire::Envelope& out) { return reader_.next(out); }

  /// Writes frame bytes (encode_frame) to `hdl`, encrypted when TLS is on,
  /// and flushes them.
  void send(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
            const std::vector<char>& bytes);

  /// Writes what TLS produced and not yet written (a client's first
  /// handshake bytes), and flushes it with what receive left unflushed.
  void flush(caf::io::abstract_broker* self, caf::io::connection_handle hdl);

  bool encrypted() const { return tls_.has_value(); }

 private:
  void buffer_ciphertext(caf::io::abstract_broker* self, caf::io::connection_handle hdl);

  frame_splitter reader_;
  std::optional<tls_channel> tls_;
  bool unflushed_ = false;  // receive wrote to the broker and nothing flushed it
};

}  // namespace lifeboat
