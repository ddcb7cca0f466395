// A step directory's MANIFEST as restore reads it: read_manifest, then the
// check of the shard files it names (verify_shard_files). The input's first
// byte chooses between the file's raw bytes (the frame: magic, length,
// checksum) and a CheckpointManifest payload that the target frames with the
// right checksum, so the fuzzer reaches the checks behind the checksum too.

#include <cstdint>
#include <string>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/checkpoint.pb.h"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// The step every seed records; another one is a corrupt manifest.
constexpr int64_t step = 7;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lifeboat;
  using namespace lifeboat::checkpoint;
  fuzz::input in{data, size};
  bool framed_here = in.byte() % 2 == 1;
  auto bytes = in.rest();
  if (framed_here) {
    wire::CheckpointManifest payload;
    if (!payload.ParseFromString(bytes)) return 0;
    bytes = encode_framed(manifest_magic, payload);
  }
  const auto& dir = fuzz::scratch_dir();
  fuzz::put_file(dir, manifest_file_name, bytes);
  auto manifest = read_manifest(dir, step);
  if (manifest) static_cast<void>(verify_shard_files(dir, *manifest));
  return 0;
}
