#include "apps/demo_trainer.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include <xxhash.h>

#include "messages/errors.hpp"

namespace lifeboat::demo {

namespace {

// splitmix64's finaliser: a cheap, well-mixed bijection on 64-bit words.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

checkpoint::host_memory map_state(size_t bytes) {
  auto memory = checkpoint::host_memory::allocate(bytes);
  if (!memory) throw std::runtime_error(describe(memory.error()));
  return std::move(*memory);
}

}  // namespace

trainer_state::trainer_state(size_t bytes)
    : memory_(map_state(std::max(bytes, sizeof(uint64_t)))),
      words_(reinterpret_cast<uint64_t*>(memory_.data())),
      count_(std::max<size_t>(bytes / sizeof(uint64_t), 1)) {}

void trainer_state::start(int rank, bool fresh) {
  rank_ = rank;
  if (!fresh) return;
  for (size_t i = 0; i < count_; ++i) words_[i] = mix(static_cast<uint64_t>(rank) << 32 | i);
}

void trainer_state::apply_step(int64_t step) {
  // Each word depends on its own past and on its neighbour, so a skipped or
  // repeated step changes the digest.
  uint64_t carry =
      mix(static_cast<uint64_t>(rank_) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(step));
  for (size_t i = 0; i < count_; ++i) {
    words_[i] = mix(words_[i] ^ carry);
    carry = words_[i];
  }
}

std::string trainer_state::digest() const {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(words_, bytes())));
  return hex;
}

}  // namespace lifeboat::demo
