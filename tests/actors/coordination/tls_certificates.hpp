#pragma once

// Certificates for the TLS tests, made at run time: an authority, and a
// certificate it signed for 127.0.0.1 and localhost, as PEM files in a fresh
// directory. No fixture files to expire, and no openssl command needed.

#include <string>

#include "actors/coordination/tls_config.hpp"

namespace lifeboat::test {

/// A directory holding ca.pem, cert.pem and key.pem; removed on destruction.
class tls_certificates {
 public:
  /// `names_loopback` false: the certificate names only "elsewhere.invalid",
  /// so a client that dials 127.0.0.1 must refuse it.
  explicit tls_certificates(bool names_loopback = true);
  tls_certificates(const tls_certificates&) = delete;
  tls_certificates& operator=(const tls_certificates&) = delete;
  ~tls_certificates();

  /// Empty when the certificates could not be made.
  const std::string& error() const { return error_; }

  /// TLS on, with these files.
  tls_config config() const;

  /// The same certificate but another authority (a stranger's).
  tls_config config_of_other_authority() const;

 private:
  std::string dir_;
  std::string error_;
};

}  // namespace lifeboat::test
