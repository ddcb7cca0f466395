#include "actors/coordination/coordination_auth.hpp"

#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <boost/endian/conversion.hpp>

namespace lifeboat {

namespace {

void append_be32(std::string& out, uint32_t x) {
  unsigned char bytes[sizeof(x)];
  boost::endian::store_big_u32(bytes, x);
  out.append(reinterpret_cast<const char*>(bytes), sizeof(bytes));
}

// Prefixed to the worker's nonce in the service's proof; see service_proof.
constexpr const char* service_proof_label = "coordination-service:";

}  // namespace

std::string make_join_nonce() {
  std::string nonce(coordination_nonce_bytes, '\0');
  // A predictable challenge would let a recorded answer be replayed, so a
  // failing CSPRNG is fatal rather than silently weak.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) !=
      1)
    throw std::runtime_error("RAND_bytes failed");
  return nonce;
}

std::string join_mac(const std::string& token, const std::string& nonce, int32_t rank,
                     int32_t world_size, uint32_t incarnation) {
  std::string data = nonce;
  append_be32(data, static_cast<uint32_t>(rank));
  append_be32(data, static_cast<uint32_t>(world_size));
  append_be32(data, incarnation);
  return token_mac(token, data);
}

std::string token_mac(const std::string& token, const std::string& data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &mac_len);
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

std::string service_proof(const std::string& token, const std::string& nonce, int32_t rank,
                          int32_t world_size, uint32_t generation) {
  return join_mac(token, service_proof_label + nonce, rank, world_size, generation);
}

bool mac_equal(const std::string& x, const std::string& y) {
  return x.size() == y.size() && CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

}  // namespace lifeboat
