#include "actors/coordination/tls_context.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// TLS_AES_128_GCM_SHA256: every TLS 1.3 implementation has it, and its
// SHA-256 matches the 32 bytes of the derived key.
constexpr unsigned char psk_cipher_id[] = {0x13, 0x01};
constexpr const char* psk_cipher_name = "TLS_AES_128_GCM_SHA256";

const tls_context* context_of(SSL* ssl) {
  return static_cast<const tls_context*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

// A session that stands for the external pre-shared key: OpenSSL's TLS 1.3
// PSK callbacks take one in place of a resumed session.
SSL_SESSION* psk_session(SSL* ssl) {
  auto* cipher = SSL_CIPHER_find(ssl, psk_cipher_id);
  auto* session = SSL_SESSION_new();
  auto& key = context_of(ssl)->psk();
  if (cipher == nullptr || session == nullptr ||
      SSL_SESSION_set1_master_key(session, reinterpret_cast<const unsigned char*>(key.data()),
                                  key.size()) != 1 ||
      SSL_SESSION_set_cipher(session, cipher) != 1 ||
      SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(session);
    return nullptr;
  }
  return session;
}

int use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* id_len,
            SSL_SESSION** session) {
  *session = psk_session(ssl);
  if (*session == nullptr) return 0;
  // After a HelloRetryRequest the key must fit the hash already chosen.
  if (md != nullptr && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(*session))) {
    SSL_SESSION_free(*session);
    *session = nullptr;
    return 1;
  }
  *id = reinterpret_cast<const unsigned char*>(tls_psk_identity);
  *id_len = std::strlen(tls_psk_identity);
  return 1;
}

int find_psk(SSL* ssl, const unsigned char* id, size_t id_len, SSL_SESSION** session) {
  // An unknown identity finds no key, and with no certificate either the
  // handshake fails: only a peer holding the token gets through.
  *session = nullptr;
  if (id_len != std::strlen(tls_psk_identity) || std::memcmp(id, tls_psk_identity, id_len) != 0)
    return 1;
  *session = psk_session(ssl);
  return *session != nullptr ? 1 : 0;
}

std::string derive_psk(const std::string& token) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(tls_psk_label), std::strlen(tls_psk_label), out,
       &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

caf::error load_certificates(SSL_CTX* ctx, const tls_config& cfg) {
  auto fail = [](const std::string& what, const std::string& file) {
    return make_error(errc::invalid_config,
                      "TLS: cannot load " + what + " " + file + ": " + take_openssl_errors());
  };
  if (SSL_CTX_use_certificate_chain_file(ctx, cfg.cert_file.c_str()) != 1)
    return fail("the certificate", cfg.cert_file);
  if (SSL_CTX_use_PrivateKey_file(ctx, cfg.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    return fail("the private key", cfg.key_file);
  if (SSL_CTX_load_verify_locations(ctx, cfg.ca_file.c_str(), nullptr) != 1)
    return fail("the certificate authority", cfg.ca_file);
  // Both ends prove themselves: a worker's certificate is checked as the
  // service's is, so no stranger with a network path joins either.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return caf::none;
}

}  // namespace

caf::expected<std::shared_ptr<tls_context>> tls_context::make(const tls_config& cfg,
                                                              const std::string& token,
                                                              tls_role role) {
  if (!cfg.uses_certificates() && token.empty())
    return make_error(errc::invalid_config,
                      std::string{"TLS without certificates ("} + tls_cert_env +
                          ") derives its key from the cluster token, and there is none");
  auto* ctx = SSL_CTX_new(role == tls_role::client ? TLS_client_method() : TLS_server_method());
  if (ctx == nullptr)
    return make_error(errc::unavailable, "TLS: cannot create a context: " + take_openssl_errors());
  std::shared_ptr<tls_context> result{
      new tls_context(ctx, role, cfg.uses_certificates() ? std::string{} : derive_psk(token))};
  SSL_CTX_set_app_data(ctx, result.get());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  // A connection lives as long as the job: nothing to resume, and a ticket
  // would only add a message after the handshake.
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (cfg.uses_certificates()) {
    if (auto err = load_certificates(ctx, cfg)) return err;
    return result;
  }
  // The suite is chosen before the key is looked at, and OpenSSL drops a
  // key whose hash differs from the suite's: both ends offer only the one
  // the key was made for.
  SSL_CTX_set_ciphersuites(ctx, psk_cipher_name);
  if (role == tls_role::client)
    SSL_CTX_set_psk_use_session_callback(ctx, use_psk);
  else
    SSL_CTX_set_psk_find_session_callback(ctx, find_psk);
  return result;
}

caf::expected<std::shared_ptr<tls_context>> tls_context::shared(const tls_config& cfg,
                                                                const std::string& token,
                                                                tls_role role) {
  using key = std::tuple<tls_role, std::string, std::string, std::string, std::string>;
  static std::mutex mutex;
  static std::map<key, std::shared_ptr<tls_context>> made;
  // The token only matters without certificates: it is what the key is made of.
  key k{role, cfg.cert_file, cfg.key_file, cfg.ca_file, cfg.uses_certificates() ? "" : token};
  std::lock_guard<std::mutex> guard{mutex};
  if (auto i = made.find(k); i != made.end()) return i->second;
  auto result = make(cfg, token, role);
  if (result) made.emplace(std::move(k), *result);
  return result;
}

tls_context::tls_context(ssl_ctx_st* ctx, tls_role role, std::string psk)
    : ctx_(ctx), role_(role), psk_(std::move(psk)) {}

tls_context::~tls_context() { SSL_CTX_free(ctx_); }

std::string take_openssl_errors() {
  std::string out;
  while (auto code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

}  // namespace lifeboat
