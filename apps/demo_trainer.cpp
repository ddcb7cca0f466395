#include "apps/demo_trainer.hpp"

#include <algorithm>
#include <cstdio>

#include <xxhash.h>

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

}  // namespace

trainer_state::trainer_state(size_t bytes)
    : words_(std::max<size_t>(bytes / sizeof(uint64_t), 1)) {}

void trainer_state::start(int rank, bool fresh) {
  rank_ = rank;
  if (!fresh) return;
  for (size_t i = 0; i < words_.size(); ++i) words_[i] = mix(static_cast<uint64_t>(rank) << 32 | i);
}

void trainer_state::apply_step(int64_t step) {
  // Each word depends on its own past and on its neighbour, so a skipped or
  // repeated step changes the digest.
  uint64_t carry =
      mix(static_cast<uint64_t>(rank_) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(step));
  for (auto& w : words_) {
    w = mix(w ^ carry);
    carry = w;
  }
}

std::string trainer_state::digest() const {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(words_.data(), bytes())));
  return hex;
}

}  // namespace lifeboat::demo
