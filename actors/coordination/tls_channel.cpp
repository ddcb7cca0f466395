#include "actors/coordination/tls_channel.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// Plaintext is taken out of a record this much at a time; a record holds
// at most 16 KiB.
constexpr int read_chunk_bytes = 16 * 1024;

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// With certificates, a client accepts only a service certificate that names
// the host it dialed: one signed by the job's authority for another host
// could otherwise stand in for the coordinator.
bool expect_name(SSL* ssl, const std::string& server_name) {
  if (server_name.empty()) return true;
  if (is_ip_address(server_name))
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.c_str()) == 1;
  return SSL_set_tlsext_host_name(ssl, server_name.c_str()) == 1 &&
         SSL_set1_host(ssl, server_name.c_str()) == 1;
}

}  // namespace

void tls_channel::ssl_deleter::operator()(ssl_st* ssl) const { SSL_free(ssl); }

caf::expected<tls_channel> tls_channel::make(const std::shared_ptr<tls_context>& ctx,
                                             const std::string& server_name) {
  auto* ssl = SSL_new(ctx->native());
  if (ssl == nullptr)
    return make_error(errc::unavailable, "TLS: cannot create a session: " + take_openssl_errors());
  tls_channel channel{ctx, ssl};
  if (ctx->role() == tls_role::server) {
    SSL_set_accept_state(ssl);
    return channel;
  }
  SSL_set_connect_state(ssl);
  if (ctx->uses_certificates() && !expect_name(ssl, server_name))
    return make_error(errc::invalid_config, "TLS: cannot check the coordinator's name " +
                                                server_name + ": " + take_openssl_errors());
  if (auto err = channel.advance_handshake()) return err;
  return channel;
}

tls_channel::tls_channel(std::shared_ptr<tls_context> ctx, ssl_st* ssl)
    : ctx_(std::move(ctx)), ssl_(ssl) {
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in_, out_);
}

caf::error tls_channel::handshake_failed() {
  std::string why = take_openssl_errors();
  if (auto verdict = SSL_get_verify_result(ssl_.get()); verdict != X509_V_OK)
    why += " (certificate: " + std::string{X509_verify_cert_error_string(verdict)} + ")";
  return make_error(errc::refused, "TLS handshake failed: " + why);
}

void tls_channel::release_held() {
  if (held_.empty()) return;
  auto held = std::move(held_);
  held_.clear();
  write(held.data(), held.size());
}

caf::error tls_channel::advance_handshake() {
  // A server first takes the ClientHello through SSL_read_early_data: once
  // it returns "finish", what the service wrote (its greeting) may go out
  // with the server's first flight as 0.5-RTT data, encrypted, instead of a
  // round trip later. The key was already proven by the ClientHello's binder
  // (or the client has yet to prove its certificate: the greeting is only a
  // nonce, public without TLS too). Early data from the client is never
  // accepted (max early data 0), so nothing is read here.
  if (ctx_->role() == tls_role::server && !hello_taken_) {
    char none[1];
    size_t read = 0;
    auto rc = SSL_read_early_data(ssl_.get(), none, sizeof(none), &read);
    if (rc == SSL_READ_EARLY_DATA_ERROR) {
      if (SSL_get_error(ssl_.get(), 0) == SSL_ERROR_WANT_READ) return caf::none;
      return handshake_failed();
    }
    if (rc != SSL_READ_EARLY_DATA_FINISH)
      return make_error(errc::refused, "TLS handshake failed: early data is not accepted");
    hello_taken_ = true;
    release_held();
  }
  auto rc = SSL_do_handshake(ssl_.get());
  if (rc == 1) {
    established_ = true;
    release_held();
    return caf::none;
  }
  if (SSL_get_error(ssl_.get(), rc) == SSL_ERROR_WANT_READ) return caf::none;
  return handshake_failed();
}

caf::error tls_channel::feed(const char* data, size_t size) {
  if (size > 0 && BIO_write(in_, data, static_cast<int>(size)) != static_cast<int>(size))
    return make_error(errc::unavailable, "TLS: cannot buffer input: " + take_openssl_errors());
  if (!established_) {
    if (auto err = advance_handshake()) return err;
    if (!established_) return caf::none;
  }
  char buf[read_chunk_bytes];
  for (;;) {
    auto n = SSL_read(ssl_.get(), buf, sizeof(buf));
    if (n > 0) {
      plain_.append(buf, static_cast<size_t>(n));
      continue;
    }
    switch (SSL_get_error(ssl_.get(), n)) {
      case SSL_ERROR_WANT_READ:
        return caf::none;
      case SSL_ERROR_ZERO_RETURN:
        return make_error(errc::unavailable, "TLS: the peer closed the session");
      default:
        return make_error(errc::corrupt, "TLS record rejected: " + take_openssl_errors());
    }
  }
}

void tls_channel::write(const char* data, size_t size) {
  if (size == 0) return;
  if (established_) {
    // A memory BIO takes everything: SSL_write never returns short here.
    SSL_write(ssl_.get(), data, static_cast<int>(size));
    return;
  }
  if (hello_taken_) {
    size_t written = 0;
    SSL_write_early_data(ssl_.get(), data, size, &written);
    return;
  }
  held_.append(data, size);
}

std::string tls_channel::take_plaintext() {
  std::string out;
  out.swap(plain_);
  return out;
}

std::string tls_channel::take_ciphertext() {
  std::string out(BIO_ctrl_pending(out_), '\0');
  if (!out.empty()) BIO_read(out_, out.data(), static_cast<int>(out.size()));
  return out;
}

}  // namespace lifeboat
