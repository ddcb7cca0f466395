#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/coordination/tls_context.hpp"

struct ssl_st;
struct bio_st;

namespace lifeboat {

/// One TLS 1.3 session run entirely in memory: the bytes a socket delivered
/// go in (feed), the plaintext comes out (take_plaintext); plaintext to send
/// goes in (write), the bytes for the socket come out (take_ciphertext).
/// No socket, no thread: a CAF broker drives it with what it reads and
/// writes, so the actors stay as they are, and a test drives two of them
/// against each other.
class tls_channel {
 public:
  /// A client starts the handshake at once (its first bytes wait in
  /// take_ciphertext) and, with certificates, requires the service's to name
  /// `server_name` (a DNS name or an IP address).
  static caf::expected<tls_channel> make(const std::shared_ptr<tls_context>& ctx,
                                         const std::string& server_name = {});

  tls_channel(tls_channel&&) noexcept = default;
  tls_channel& operator=(tls_channel&&) noexcept = default;
  ~tls_channel() = default;

  /// Takes bytes from the peer. A failed handshake is errc::refused; once
  /// established, a record that fails its authentication (a flipped byte, a
  /// forged or replayed record) is errc::corrupt, and the peer's closing the
  /// session errc::unavailable. After an error the channel is unusable.
  caf::error feed(const char* data, size_t size);

  /// Queues plaintext for the peer: held back until the handshake ends, or
  /// for a server until the ClientHello came (then sent as 0.5-RTT data).
  void write(const char* data, size_t size);

  /// The plaintext received so far, taken out.
  std::string take_plaintext();

  /// The bytes for the socket produced so far, taken out.
  std::string take_ciphertext();

  bool established() const { return established_; }

 private:
  struct ssl_deleter {
    void operator()(ssl_st* ssl) const;
  };

  tls_channel(std::shared_ptr<tls_context> ctx, ssl_st* ssl);

  caf::error advance_handshake();
  caf::error handshake_failed();
  void release_held();

  std::shared_ptr<tls_context> ctx_;
  std::unique_ptr<ssl_st, ssl_deleter> ssl_;
  bio_st* in_ = nullptr;   // the peer's bytes, owned by ssl_
  bio_st* out_ = nullptr;  // bytes for the peer, owned by ssl_
  std::string held_;       // plaintext written before the handshake ended
  std::string plain_;
  bool established_ = false;
  bool hello_taken_ = false;  // a server processed the ClientHello
};

}  // namespace lifeboat
