#pragma once

#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "actors/coordination/tls_config.hpp"

struct ssl_ctx_st;

namespace lifeboat {

/// Which end of a coordination connection: the agent connects, the service accepts.
enum class tls_role { client, server };

/// Label of the pre-shared key: HMAC-SHA256(cluster token, label). Fixed, so
/// every process of a job derives the same key from its token with no file
/// to distribute; the label keeps the key apart from the join's MACs.
constexpr const char* tls_psk_label = "lifeboat coordination TLS 1.3 external PSK v1";
/// The identity both ends name the pre-shared key by.
constexpr const char* tls_psk_identity = "lifeboat-cluster-token";

/// The OpenSSL context of one side of the coordination connections: TLS 1.3
/// only, no session tickets, authenticated either by certificates (both
/// ends present one signed by the configured authority; the client checks
/// the service's name) or by the pre-shared key derived from the token.
/// Shared by every connection of a broker (tls_channel).
class tls_context {
 public:
  /// errc::invalid_config when a certificate file cannot be loaded or, with
  /// no certificates, the token is empty (a key derived from it would be public).
  static caf::expected<std::shared_ptr<tls_context>> make(const tls_config& cfg,
                                                          const std::string& token, tls_role role);

  /// The context make() returns for these arguments, made at the first call
  /// in this process and kept until it exits; every later call (a reconnect,
  /// another agent, the next service) shares it. Why: a context costs about
  /// as much CPU as a handshake (OpenSSL 3.0 fetches its algorithms and,
  /// first in a process, loads its configuration: milliseconds), and a
  /// worker that makes it while joining pays that on the join's path.
  /// Certificate files are read at the first call only. A failed make() is
  /// not kept: the next call tries again. Thread-safe.
  static caf::expected<std::shared_ptr<tls_context>> shared(const tls_config& cfg,
                                                            const std::string& token,
                                                            tls_role role);

  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  ~tls_context();

  ssl_ctx_st* native() const { return ctx_; }
  tls_role role() const { return role_; }
  bool uses_certificates() const { return psk_.empty(); }
  /// The pre-shared key's bytes; empty with certificates.
  const std::string& psk() const { return psk_; }

 private:
  tls_context(ssl_ctx_st* ctx, tls_role role, std::string psk);

  ssl_ctx_st* ctx_;
  tls_role role_;
  std::string psk_;
};

/// Every error OpenSSL queued on this thread, joined with "; " (and the
/// queue emptied); "unknown error" when it holds none.
std::string take_openssl_errors();

}  // namespace lifeboat
