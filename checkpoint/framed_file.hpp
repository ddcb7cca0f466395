#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

#include <caf/error.hpp>

namespace lifeboat::checkpoint {

// Index and manifest files carry their own checksum, so that a garbled or
// torn file is told apart from a valid one even where protobuf would parse it:
//   magic (8 bytes) | payload length (u64 LE) | XXH3-64 of payload (u64 LE) | payload
constexpr const char index_magic[] = "LBINDEX1";
constexpr const char manifest_magic[] = "LBMANIF1";
constexpr size_t magic_size = 8;
constexpr size_t frame_header_size = magic_size + 2 * sizeof(uint64_t);

/// The version of the checkpoint file formats (messages/checkpoint.proto).
constexpr uint32_t checkpoint_schema_version = 1;

std::string encode_framed(const char* magic, const google::protobuf::MessageLite& msg);

/// Parses `bytes` read from `path` into `msg`; errc::corrupt names the file and
/// what is wrong with it.
caf::error decode_framed(const char* magic, const std::string& bytes, const std::string& path,
                         google::protobuf::MessageLite& msg);

/// XXH3-64 of a whole byte string (the manifest's record of an index file).
uint64_t checksum_of(const std::string& bytes);

}  // namespace lifeboat::checkpoint
