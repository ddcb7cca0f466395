// coordination_state's key-value store.
#include "actors/coordination/coordination_state.hpp"

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST(coordination_keys, normalisation_collapses_and_strips_slashes) {
  EXPECT_EQ(normalize_key("a//b///c/"), "a/b/c");
  EXPECT_EQ(normalize_key("/"), "/");
  EXPECT_EQ(normalize_prefix("a//b/"), "a/b/");
}

TEST_F(state_test, insert_if_absent_and_blocking_get) {
  join_all();
  request(2, get(5, "a//b/", 1000));
  EXPECT_FALSE(reply_to(2, 5));
  request(1, insert(1, "a/b", "x"));
  EXPECT_EQ(reply_to(1, 1)->error_code(), 0u);
  ASSERT_TRUE(reply_to(2, 5));
  EXPECT_EQ(reply_to(2, 5)->value(), "x");
  request(3, insert(2, "/a/b", "y"));
  request(3, insert(2, "a/b/", "y"));
  EXPECT_EQ(reply_to(3, 2)->error_code(), static_cast<uint32_t>(errc::already_exists));
}

TEST_F(state_test, get_times_out_at_its_deadline_and_can_be_cancelled) {
  join_all();
  request(1, get(1, "never", 200));
  request(1, get(2, "never", 10000));
  // The clock counts whole milliseconds, truncated: a get due 200 ms later
  // could end before 200 ms passed, so it is due 1 ms after that.
  EXPECT_EQ(st.next_deadline_ms(), now + 201);
  st.on_tick(now + 200);
  out = st.take_output();
  EXPECT_FALSE(reply_to(1, 1));
  st.on_tick(now + 201);
  out = st.take_output();
  EXPECT_EQ(reply_to(1, 1)->error_code(), static_cast<uint32_t>(errc::timeout));
  wire::Envelope cancel;
  cancel.mutable_cancel()->set_id(2);
  request(1, cancel);
  EXPECT_EQ(reply_to(1, 2)->error_code(), static_cast<uint32_t>(errc::cancelled));
}

TEST_F(state_test, prefix_get_and_erase) {
  join_all();
  request(1, insert(1, "ckpt/1", "a"));
  request(1, insert(2, "ckpt/2", "b"));
  request(1, insert(3, "ckptx", "c"));
  EXPECT_EQ(st.snapshot("ckpt/").size(), 2u);
  wire::Envelope erase;
  erase.mutable_erase_prefix()->set_id(4);
  erase.mutable_erase_prefix()->set_prefix("ckpt//");
  request(1, erase);
  EXPECT_EQ(reply_to(1, 4)->error_code(), 0u);
  EXPECT_EQ(st.snapshot(""), (std::map<std::string, std::string>{{"ckptx", "c"}}));
}

}  // namespace
