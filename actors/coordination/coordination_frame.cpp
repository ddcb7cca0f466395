#include "actors/coordination/coordination_frame.hpp"

#include <boost/endian/conversion.hpp>

namespace lifeboat {

std::vector<char> encode_frame(const wire::Envelope& env) {
  auto size = env.ByteSizeLong();
  std::vector<char> out(frame_header_bytes + size);
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(out.data()),
                               static_cast<uint32_t>(size));
  env.SerializeToArray(out.data() + frame_header_bytes, static_cast<int>(size));
  return out;
}

uint32_t decode_frame_length(const char* header) {
  return boost::endian::load_big_u32(reinterpret_cast<const unsigned char*>(header));
}

std::optional<wire::Envelope> decode_frame_body(const char* data, size_t size) {
  wire::Envelope env;
  if (!env.ParseFromArray(data, static_cast<int>(size)) ||
      env.body_case() == wire::Envelope::BODY_NOT_SET)
    return std::nullopt;
  return env;
}

void frame_splitter::append(const char* data, size_t size) {
  // The frames taken so far go first: one move per read, not one per frame.
  buf_.erase(0, pos_);
  pos_ = 0;
  buf_.append(data, size);
}

frame_splitter::status frame_splitter::next(wire::Envelope& out) {
  auto available = buf_.size() - pos_;
  if (available < frame_header_bytes) return status::need_more;
  auto len = decode_frame_length(buf_.data() + pos_);
  if (len > max_frame_bytes) return status::oversized;
  if (available < frame_header_bytes + len) return status::need_more;
  auto env = decode_frame_body(buf_.data() + pos_ + frame_header_bytes, len);
  pos_ += frame_header_bytes + len;
  if (!env) return status::malformed;
  out = std::move(*env);
  return status::frame;
}

}  // namespace lifeboat
