#include "checkpoint/framed_file.hpp"

#include <cstring>

#include <boost/endian/conversion.hpp>

#include "checkpoint/file_io.hpp"
#include "checkpoint/xxh3.hpp"

namespace lifeboat::checkpoint {

namespace {

void put_u64(std::string& out, uint64_t x) {
  unsigned char bytes[sizeof(x)];
  boost::endian::store_little_u64(bytes, x);
  out.append(reinterpret_cast<const char*>(bytes), sizeof(bytes));
}

uint64_t get_u64(const char* in) {
  return boost::endian::load_little_u64(reinterpret_cast<const unsigned char*>(in));
}

}  // namespace

uint64_t checksum_of(const std::string& bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string encode_framed(const char* magic, const google::protobuf::MessageLite& msg) {
  auto payload = msg.SerializeAsString();
  std::string out;
  out.reserve(frame_header_size + payload.size());
  out.append(magic, magic_size);
  put_u64(out, payload.size());
  put_u64(out, checksum_of(payload));
  out += payload;
  return out;
}

caf::error decode_framed(const char* magic, const std::string& bytes, const std::string& path,
                         google::protobuf::MessageLite& msg) {
  if (bytes.size() < frame_header_size)
    return corrupt_file(path, "too short (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), magic, magic_size) != 0) return corrupt_file(path, "bad magic");
  auto length = get_u64(bytes.data() + magic_size);
  auto expected = get_u64(bytes.data() + magic_size + sizeof(uint64_t));
  if (length != bytes.size() - frame_header_size)
    return corrupt_file(path, "length " + std::to_string(bytes.size() - frame_header_size) +
                                  " instead of " + std::to_string(length));
  auto payload = bytes.substr(frame_header_size);
  if (checksum_of(payload) != expected) return corrupt_file(path, "checksum mismatch");
  if (!msg.ParseFromString(payload)) return corrupt_file(path, "unparsable");
  return {};
}

}  // namespace lifeboat::checkpoint
