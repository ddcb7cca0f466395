#pragma once

#include <cstdint>
#include <string>

namespace lifeboat {

/// The coordination protocol's version; a join with another version is refused.
/// 2: PeerSend to every_other_rank (-2), which a version-1 service took for an
/// absent rank and dropped: the leader's query would never arrive.
constexpr uint32_t coordination_protocol_version = 2;

/// Bytes of the random challenge the service sends on every connection.
constexpr size_t coordination_nonce_bytes = 32;

/// A fresh random challenge from the operating system's CSPRNG.
std::string make_join_nonce();

/// HMAC-SHA256(token, nonce || rank || world_size || incarnation), with the
/// integers as 4-byte big-endian values; binding them stops a captured answer
/// from being replayed for another rank or generation.
std::string join_mac(const std::string& token, const std::string& nonce, int32_t rank,
                     int32_t world_size, uint32_t incarnation);

/// Compares two MACs in constant time.
bool mac_equal(const std::string& x, const std::string& y);

}  // namespace lifeboat
