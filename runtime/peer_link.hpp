#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <google/protobuf/message_lite.h>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/coordination/tls_channel.hpp"
#include "actors/coordination/tls_context.hpp"
#include "checkpoint/file_io.hpp"
#include "checkpoint/file_system.hpp"

namespace lifeboat {

/// Bounds every read and write of a peer link: a peer that stops answering
/// (its host gone, a stranger holding the connection open) is an error after
/// this, never a hang.
constexpr auto peer_link_io_timeout = std::chrono::seconds{10};

/// A connector must prove that it holds the token within this of its
/// connection (a stranger that sends nothing, or a byte at a time, is cut).
constexpr auto peer_link_handshake_timeout = std::chrono::seconds{5};

/// The largest message a peer link takes (files travel outside messages).
constexpr uint32_t peer_link_max_message = 64 * 1024;

/// One connection between the peer tiers of two workers (peer_tier.hpp): a
/// blocking TCP socket on which both ends first prove that they hold the
/// cluster token (a fresh nonce each, answered with an HMAC under it), then
/// exchange length-prefixed messages (messages/checkpoint.proto) and whole
/// files. Neither end trusts a byte before the other's proof. With a TLS
/// context (the coordination channel's settings), every byte after the TCP
/// handshake is a TLS 1.3 record: a checkpoint crossing hosts travels
/// encrypted, and a record altered on the path ends the link. Without, the
/// reader verifies the files by their checksums only.
///
/// Thread-safety: one thread at a time per link. Lifetime: owns its socket.
class peer_link {
 public:
  /// Connects to a peer tier's listener and checks its proof; then the
  /// request that follows (send with its `proof`) carries this end's.
  /// Errors: errc::io_error (no connection, a broken one), errc::refused
  /// (the listener's proof is wrong: another job or a stranger), errc::timeout.
  /// `tls`: a client context, or null for clear text; its handshake
  /// failing (another key, a listener without TLS) is errc::refused.
  static caf::expected<peer_link> connect(const std::string& host, uint16_t port,
                                          const std::string& token,
                                          std::shared_ptr<tls_context> tls = nullptr);

  /// The listener's end of an accepted connection `fd` (owned from now):
  /// reads the connector's challenge and answers it. The connector's own
  /// proof comes with its first request: check it with verify_proof.
  /// `tls`: a server context, or null for clear text.
  static caf::expected<peer_link> accept(int fd, const std::string& token,
                                         std::shared_ptr<tls_context> tls = nullptr);

  peer_link(peer_link&& other) noexcept;
  peer_link& operator=(peer_link&& other) noexcept;
  peer_link(const peer_link&) = delete;
  peer_link& operator=(const peer_link&) = delete;
  ~peer_link();

  /// The connector's proof, for its request (connector's end only).
  std::string proof() const;

  /// Whether `proof` is the connector's valid one (listener's end only);
  /// from a valid one on, peer_link_handshake_timeout no longer applies.
  bool verify_proof(const std::string& proof);

  /// Whether the link runs a TLS session.
  bool encrypted() const { return tls_.has_value(); }

  caf::error send(const google::protobuf::MessageLite& message);
  caf::error receive(google::protobuf::MessageLite& message);

  /// Sends the first `bytes` bytes of the file at `path`; without TLS, in the
  /// kernel (sendfile). A peer that went away is an error, never a SIGPIPE.
  caf::error send_file(const std::string& path, uint64_t bytes);

  /// Sends `size` bytes from memory, as send_file sends a file's.
  caf::error send_memory(const char* data, uint64_t size);

  /// Writes the next `bytes` bytes from the peer into the file at `path`
  /// through `files`, and syncs it: a new file, or one allocated beforehand
  /// (a memory tier's spare), written over from its start and not truncated,
  /// which must then end with those bytes (errc::io_error otherwise).
  caf::error receive_file(checkpoint::file_system& files, const std::string& path, uint64_t bytes);

  /// Reads exactly the next `size` bytes from the peer into `data` (a file's
  /// bytes streamed straight where they belong).
  caf::error receive_bytes(char* data, size_t size);

  /// "host:port" of the other end, for messages.
  const std::string& peer() const { return peer_; }

 private:
  peer_link(int fd, std::string peer, std::string token);

  // Starts the TLS session under `tls` (a client sends its ClientHello).
  caf::error start_tls(const std::shared_ptr<tls_context>& tls);
  // Plaintext out: through the TLS session when there is one.
  caf::error send_bytes(const char* data, size_t size);
  // Plaintext in: at least one byte, at most `size`.
  caf::expected<size_t> receive_some(char* data, size_t size);
  // The socket itself.
  caf::error send_raw(const char* data, size_t size);
  // The first `bytes` bytes of the open file `file` (at `path`), with sendfile(2).
  caf::error send_file_in_kernel(int file, const std::string& path, uint64_t bytes);
  caf::expected<size_t> receive_raw(char* data, size_t size);
  // Sends what the TLS session has for the peer.
  caf::error flush_tls();

  int fd_ = -1;
  std::string peer_;
  std::string token_;
  std::string connector_nonce_;
  std::string listener_nonce_;
  // Until the connector proved itself (listener's end): when it must have.
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::optional<tls_channel> tls_;
  std::string plain_;  // plaintext the session gave and nobody read yet
  size_t plain_at_ = 0;
};

}  // namespace lifeboat
