#include "actors/coordination/coordination_auth.hpp"

#include <gtest/gtest.h>

using namespace lifeboat;

namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 0xF]);
  }
  return out;
}

TEST(coordination_auth, mac_matches_an_independent_hmac_sha256) {
  // Python: hmac.new(b"Jefe", b"what do ya want for nothing?" +
  //                  struct.pack(">iiI", 1, 2, 3), hashlib.sha256).hexdigest()
  EXPECT_EQ(hex(join_mac("Jefe", "what do ya want for nothing?", 1, 2, 3)),
            "8c971735398eb7403a6a5ce3c4c5a297dafba2b79a892b547f056fb63bb31180");
}

TEST(coordination_auth, mac_binds_every_field) {
  auto base = join_mac("t", "n", 1, 2, 3);
  EXPECT_FALSE(mac_equal(base, join_mac("u", "n", 1, 2, 3)));
  EXPECT_FALSE(mac_equal(base, join_mac("t", "m", 1, 2, 3)));
  EXPECT_FALSE(mac_equal(base, join_mac("t", "n", 0, 2, 3)));
  EXPECT_FALSE(mac_equal(base, join_mac("t", "n", 1, 3, 3)));
  EXPECT_FALSE(mac_equal(base, join_mac("t", "n", 1, 2, 4)));
  EXPECT_TRUE(mac_equal(base, join_mac("t", "n", 1, 2, 3)));
  EXPECT_FALSE(mac_equal(base, base.substr(1)));
}

// The service's proof and the worker's MAC over the same inputs differ, so
// neither can be relayed back as the other.
TEST(coordination_auth, service_proof_is_apart_from_the_workers_mac) {
  EXPECT_FALSE(mac_equal(service_proof("t", "n", 1, 2, 3), join_mac("t", "n", 1, 2, 3)));
  EXPECT_TRUE(mac_equal(service_proof("t", "n", 1, 2, 3), service_proof("t", "n", 1, 2, 3)));
  EXPECT_FALSE(mac_equal(service_proof("t", "n", 1, 2, 3), service_proof("t", "m", 1, 2, 3)));
}

TEST(coordination_auth, nonces_are_fresh) {
  auto a = make_join_nonce();
  EXPECT_EQ(a.size(), coordination_nonce_bytes);
  EXPECT_NE(a, make_join_nonce());
}

}  // namespace
