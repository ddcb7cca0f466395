#pragma once

#include <functional>
#include <string>

#include <caf/expected.hpp>

namespace lifeboat {

/// Turns TLS on the coordination connections on ("1", "on", "true") or off
/// ("0", "off", "false"); unset, it is on exactly when the job spans hosts.
constexpr const char* tls_env = "LIFEBOAT_TLS";
/// PEM files of this process's certificate (chain), its private key and the
/// authority that signed every certificate of the job. All three or none:
/// without them, the connections use a pre-shared key derived from the
/// cluster token (tls_context.hpp).
constexpr const char* tls_cert_env = "LIFEBOAT_TLS_CERT";
constexpr const char* tls_key_env = "LIFEBOAT_TLS_KEY";
constexpr const char* tls_ca_env = "LIFEBOAT_TLS_CA";

/// Whether and how the coordination connections are encrypted.
struct tls_config {
  bool enabled = false;
  std::string cert_file;  // empty: pre-shared key from the cluster token
  std::string key_file;
  std::string ca_file;

  bool uses_certificates() const { return !cert_file.empty(); }
};

/// True for the names and addresses of this host's loopback interface
/// (localhost, 127.0.0.0/8, ::1): a coordinator there keeps the job on one host.
bool is_loopback_host(const std::string& host);

/// Reads tls_env and the certificate variables. `spans_hosts` is the default
/// of tls_env. A value of tls_env that is no boolean, or certificate
/// variables given in part, are errc::invalid_config naming the variable.
caf::expected<tls_config> read_tls_config(const std::function<const char*(const char*)>& getenv_fn,
                                          bool spans_hosts);

}  // namespace lifeboat
