#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

/// How many bytes a broker connection asks for at most per read. Protocol
/// frames are far smaller, so one read takes a frame, or all that arrived
/// together, in one system call (reading a header, then exactly its body,
/// cost three per frame); a large value arrives over several reads. Small,
/// because CAF sizes the read buffer to it again after every read: with
/// 64 KiB, handler_bench's N = 16 agreement was about 0.8 ms slower (A/B, 3 x 30
/// rounds); with 4 KiB it measured the same as reading header and body
/// exactly, within the run-to-run noise.
constexpr size_t frame_read_bytes = 4 * 1024;

/// Splits a byte stream into frames, whatever the chunks it arrives in: a
/// broker reading `at_most(frame_read_bytes)` and blocking-socket peers
/// (tests, benchmarks) alike.
class frame_splitter {
 public:
  enum class status { need_more, frame, oversized, malformed };

  void append(const char* data, size_t size);

  /// Takes the next whole frame out of the buffer into `out`. A frame that
  /// declares more than max_frame_bytes is refused from its header alone, so
  /// the buffer never holds much more than one frame's limit.
  status next(wire::Envelope& out);

 private:
  std::string buf_;
  size_t pos_ = 0;  // start of the first frame not yet taken
};

}  // namespace lifeboat
