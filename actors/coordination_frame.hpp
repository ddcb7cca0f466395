#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/io/abstract_broker.hpp>

#include "messages/coordination.pb.h"

namespace lifeboat {

/// Bytes of the big-endian length prefix in front of every frame.
constexpr size_t frame_header_bytes = 4;

/// The largest frame body either side accepts; a peer declaring more is cut off
/// before anything is allocated for it.
constexpr uint32_t max_frame_bytes = 4u * 1024u * 1024u;

/// One Envelope as it goes on the wire: length prefix, then the protobuf bytes.
std::vector<char> encode_frame(const wire::Envelope& env);

/// Reads the length prefix (exactly frame_header_bytes bytes).
uint32_t decode_frame_length(const char* header);

/// Parses a frame body; nullopt when the bytes are not an Envelope with a body.
std::optional<wire::Envelope> decode_frame_body(const char* data, size_t size);

/// Reads frames off a broker connection whose receive policy is always
/// `exactly(next_read())`: a header, then a body of the declared length.
class frame_reader {
 public:
  enum class status { read_more, frame, oversized, malformed };

  /// Consumes the next_read() bytes the broker delivered.
  status consume(const char* data, size_t size, wire::Envelope& out);

  /// How many bytes to ask the broker for next.
  size_t next_read() const { return body_bytes_ == 0 ? frame_header_bytes : body_bytes_; }

  /// The length the peer declared in its last header.
  uint32_t declared_length() const { return declared_; }

 private:
  uint32_t body_bytes_ = 0;  // 0: the next read is a header
  uint32_t declared_ = 0;
};

/// Writes one frame to a broker connection and flushes it.
void write_frame(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                 const wire::Envelope& env);

/// Splits a byte stream into frames; used by blocking-socket peers (tests,
/// benchmarks) that have no broker to do the framing for them.
class frame_splitter {
 public:
  enum class status { need_more, frame, oversized, malformed };

  void append(const char* data, size_t size) { buf_.append(data, size); }

  /// Takes the next whole frame out of the buffer into `out`.
  status next(wire::Envelope& out);

 private:
  std::string buf_;
};

}  // namespace lifeboat
