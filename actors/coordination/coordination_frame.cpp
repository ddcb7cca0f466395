#include "actors/coordination/coordination_frame.hpp"

namespace lifeboat {

std::vector<char> encode_frame(const wire::Envelope& env) {
  auto size = env.ByteSizeLong();
  std::vector<char> out(frame_header_bytes + size);
  auto len = static_cast<uint32_t>(size);
  out[0] = static_cast<char>((len >> 24) & 0xFF);
  out[1] = static_cast<char>((len >> 16) & 0xFF);
  out[2] = static_cast<char>((len >> 8) & 0xFF);
  out[3] = static_cast<char>(len & 0xFF);
  env.SerializeToArray(out.data() + frame_header_bytes, static_cast<int>(size));
  return out;
}

uint32_t decode_frame_length(const char* header) {
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(header[i])); };
  return (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
}

std::optional<wire::Envelope> decode_frame_body(const char* data, size_t size) {
  wire::Envelope env;
  if (!env.ParseFromArray(data, static_cast<int>(size)) ||
      env.body_case() == wire::Envelope::BODY_NOT_SET)
    return std::nullopt;
  return env;
}

void write_frame(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                 const wire::Envelope& env) {
  write_bytes(self, hdl, encode_frame(env));
}

void write_bytes(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                 const std::vector<char>& bytes) {
  self->write(hdl, bytes.size(), bytes.data());
  self->flush(hdl);
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
