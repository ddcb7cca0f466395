// The join handshake and everything a peer may send the coordination service
// afterwards, through the service's logic (coordination_state) without
// sockets. The input is a list of records: an operation byte (its low two
// bits pick one of four connections), then for a frame a 2-byte length and
// the frame's body. A JoinRequest whose mac is empty gets the right MAC for
// its connection's nonce, so the fuzzer reaches the joined states too.
//
// Checked after every step: a connection that has not joined is sent nothing
// but its Hello and a JoinReply (nothing of the job leaks before the peer
// proved the token), and every frame the service sends has a body.

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/coordination_state.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace lifeboat;

constexpr int32_t world_size = 4;
constexpr size_t connection_slots = 4;
const std::string token = "fuzz-token";

enum op : uint8_t { frame_op = 0, disconnect_op = 1, tick_op = 2, process_exit_op = 3 };

struct slot {
  conn_id id = 0;  // 0: not connected
  std::string nonce;
  bool joined = false;
};

class driver {
 public:
  void connect(slot& s) {
    s.id = next_id_++;
    s.nonce = "nonce-" + std::to_string(s.id);
    s.joined = false;
    st_.on_connect(s.id, s.nonce, now_);
    check();
  }

  void frame(slot& s, const std::string& body) {
    if (s.id == 0) connect(s);
    auto env = decode_frame_body(body.data(), body.size());
    if (!env) return disconnect(s);  // the broker closes on a malformed frame
    if (env->has_join() && env->join().mac().empty()) {
      auto& j = env->join();
      env->mutable_join()->set_mac(
          join_mac(token, s.nonce, j.rank(), j.world_size(), j.incarnation()));
    }
    st_.on_frame(s.id, *env, now_);
    check();
  }

  void disconnect(slot& s) {
    if (s.id == 0) return;
    st_.on_disconnect(s.id, now_);
    s.id = 0;
    check();
  }

  void tick(uint8_t steps) {
    now_ += 50 * static_cast<int64_t>(steps);
    st_.on_tick(now_);
    check();
  }

  void process_exit(uint8_t rank) {
    st_.on_process_exit(rank % world_size, st_.generation(), "fuzz", now_);
    check();
  }

  std::array<slot, connection_slots> slots;

 private:
  slot* find(conn_id id) {
    for (auto& s : slots)
      if (s.id == id) return &s;
    return nullptr;
  }

  void check() {
    auto out = st_.take_output();
    for (auto& [id, env] : out.frames) {
      if (env.body_case() == wire::Envelope::BODY_NOT_SET) std::abort();
      auto* s = find(id);
      if (s == nullptr) continue;
      if (env.has_join_reply() && env.join_reply().ok()) s->joined = true;
      if (!s->joined && !env.has_hello() && !env.has_join_reply()) std::abort();
    }
    // As in the service's broker: a connection the state closes is not
    // reported back to it.
    for (auto id : out.closes)
      if (auto* s = find(id)) s->id = 0;
  }

  coordination_state st_{{world_size, token, 1000}};
  conn_id next_id_ = 1;
  int64_t now_ = 1000;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in{data, size};
  driver d;
  while (!in.empty()) {
    auto code = in.byte();
    auto& s = d.slots[code % connection_slots];
    switch (static_cast<op>((code >> 2) % 4)) {
      case frame_op: {
        size_t len = in.byte();
        len = (len << 8) | in.byte();
        d.frame(s, in.take(len));
        break;
      }
      case disconnect_op:
        d.disconnect(s);
        break;
      case tick_op:
        d.tick(in.byte());
        break;
      case process_exit_op:
        d.process_exit(in.byte());
        break;
    }
  }
  return 0;
}
