// The coordination frame decoder (both sides of every coordination
// connection): a byte stream, cut into reads of the sizes the input's first
// byte chooses, through frame_splitter, as a broker receives it.

#include <cstdint>
#include <cstdlib>

#include "actors/coordination/coordination_frame.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lifeboat;
  fuzz::input in{data, size};
  size_t read_bytes = 1 + in.byte() % 64;
  auto stream = in.rest();
  frame_splitter splitter;
  wire::Envelope env;
  for (size_t at = 0; at < stream.size(); at += read_bytes) {
    auto n = std::min(read_bytes, stream.size() - at);
    splitter.append(stream.data() + at, n);
    for (;;) {
      auto s = splitter.next(env);
      if (s == frame_splitter::status::need_more) break;
      // A broker closes the connection on either; nothing more is read.
      if (s == frame_splitter::status::oversized || s == frame_splitter::status::malformed)
        return 0;
      // The handlers switch on the body: a frame without one is never taken.
      if (env.body_case() == wire::Envelope::BODY_NOT_SET) std::abort();
    }
  }
  return 0;
}
