#include "tests/actors/coordination/tls_certificates.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace lifeboat::test {

namespace {

constexpr long validity_seconds = 24L * 3600L;

using key_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using cert_ptr = std::unique_ptr<X509, decltype(&X509_free)>;

key_ptr make_key() { return key_ptr{EVP_EC_gen("P-256"), EVP_PKEY_free}; }

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  if (auto* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value)) {
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
}

// A certificate for `key` named `common_name`, signed by `issuer_key` (and
// issued by `issuer`, or by itself when null).
cert_ptr make_cert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key,
                   const char* alt_names, long serial) {
  cert_ptr cert{X509_new(), X509_free};
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity_seconds);
  X509_set_pubkey(cert.get(), key);
  auto* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  auto* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer == nullptr)
    add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
  else
    add_extension(cert.get(), signer, NID_subject_alt_name, alt_names);
  X509_sign(cert.get(), issuer_key, EVP_sha256());
  return cert;
}

bool write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  auto* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  auto ok = cert != nullptr
                ? PEM_write_X509(f, cert) == 1
                : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

tls_certificates::tls_certificates(bool names_loopback) {
  char tmpl[] = "/tmp/lifeboat-tls-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    error_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  auto ca_key = make_key();
  auto other_key = make_key();
  auto leaf_key = make_key();
  if (!ca_key || !other_key || !leaf_key) {
    error_ = "cannot generate EC keys";
    return;
  }
  auto ca = make_cert(ca_key.get(), "lifeboat test CA", nullptr, ca_key.get(), nullptr, 1);
  auto other = make_cert(other_key.get(), "stranger CA", nullptr, other_key.get(), nullptr, 2);
  auto leaf = make_cert(leaf_key.get(), "lifeboat coordinator", ca.get(), ca_key.get(),
                        names_loopback ? "IP:127.0.0.1,DNS:localhost" : "DNS:elsewhere.invalid", 3);
  if (!write_pem(dir_ + "/ca.pem", ca.get(), nullptr) ||
      !write_pem(dir_ + "/other_ca.pem", other.get(), nullptr) ||
      !write_pem(dir_ + "/cert.pem", leaf.get(), nullptr) ||
      !write_pem(dir_ + "/key.pem", nullptr, leaf_key.get()))
    error_ = "cannot write the PEM files in " + dir_;
}

tls_certificates::~tls_certificates() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

tls_config tls_certificates::config() const {
  tls_config cfg;
  cfg.enabled = true;
  cfg.cert_file = dir_ + "/cert.pem";
  cfg.key_file = dir_ + "/key.pem";
  cfg.ca_file = dir_ + "/ca.pem";
  return cfg;
}

tls_config tls_certificates::config_of_other_authority() const {
  auto cfg = config();
  cfg.ca_file = dir_ + "/other_ca.pem";
  return cfg;
}

}  // namespace lifeboat::test
