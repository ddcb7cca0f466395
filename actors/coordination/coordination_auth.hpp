#pragma once

#include <cstdint>
#include <string>

namespace lifeboat {

/// The coordination protocol's version; a join with another version is refused.
/// 2: PeerSend to every_other_rank (-2), which a version-1 service took for an
/// absent rank and dropped: the leader's query would never arrive.
/// 3: the worker challenges the service too (JoinRequest.nonce) and refuses a
/// JoinReply without a valid proof, which a version-2 service never sends.
/// 4: the service answers every Heartbeat with one, and a worker that hears
/// nothing for its heartbeat timeout takes the service for lost; a version-3
/// service never answers, so its version-4 workers would give it up.
constexpr uint32_t coordination_protocol_version = 4;

/// Bytes of the random challenge the service sends on every connection.
constexpr size_t coordination_nonce_bytes = 32;

/// A fresh random challenge from the operating system's CSPRNG.
std::string make_join_nonce();

/// HMAC-SHA256(token, nonce || rank || world_size || incarnation), with the
/// integers as 4-byte big-endian values; binding them stops a captured answer
/// from being replayed for another rank or generation.
std::string join_mac(const std::string& token, const std::string& nonce, int32_t rank,
                     int32_t world_size, uint32_t incarnation);

/// HMAC-SHA256(token, data): what every proof of holding the token is made of.
std::string token_mac(const std::string& token, const std::string& data);

/// The service's answer to a worker's challenge:
/// join_mac(token, service_proof_label || nonce, rank, world_size, generation).
/// The label keeps the two directions apart: a worker's MAC is never a valid
/// proof of the service, nor the other way round, so neither can be relayed
/// back to the side that made it.
std::string service_proof(const std::string& token, const std::string& nonce, int32_t rank,
                          int32_t world_size, uint32_t generation);

/// Compares two MACs in constant time.
bool mac_equal(const std::string& x, const std::string& y);

}  // namespace lifeboat
