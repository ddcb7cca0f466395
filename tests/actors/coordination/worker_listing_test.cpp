#include "actors/coordination/worker_listing.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

std::vector<wire::WorkerInfo> rows_of(size_t n) {
  std::vector<wire::WorkerInfo> rows(n);
  for (size_t r = 0; r < n; ++r) {
    rows[r].set_rank(static_cast<int32_t>(r));
    rows[r].set_state("alive");
  }
  return rows;
}

TEST(worker_listing, lists_every_rank_up_to_the_bound) {
  wire::ActorStatus st;
  list_workers(rows_of(status_workers_listed_max), st);
  EXPECT_EQ(static_cast<size_t>(st.workers_size()), status_workers_listed_max);
  EXPECT_EQ(st.metrics().at("coordination_workers_alive"),
            static_cast<double>(status_workers_listed_max));
  EXPECT_EQ(st.metrics().at("coordination_workers_lost"), 0.0);
  EXPECT_EQ(st.metrics().at("coordination_workers_unlisted"), 0.0);
}

TEST(worker_listing, beyond_the_bound_lists_only_ranks_that_need_a_look) {
  auto rows = rows_of(1024);
  rows[7].set_state("lost");
  rows[300].set_straggler(true);
  rows[900].set_state("error");
  wire::ActorStatus st;
  list_workers(rows, st);
  ASSERT_EQ(st.workers_size(), 3);
  EXPECT_EQ(st.workers(0).rank(), 7);
  EXPECT_EQ(st.workers(1).rank(), 300);
  EXPECT_EQ(st.workers(2).rank(), 900);
  EXPECT_EQ(st.metrics().at("coordination_workers_alive"), 1022.0);
  EXPECT_EQ(st.metrics().at("coordination_workers_lost"), 1.0);
  EXPECT_EQ(st.metrics().at("coordination_workers_error"), 1.0);
  EXPECT_EQ(st.metrics().at("coordination_workers_unlisted"), 1021.0);
}

TEST(worker_listing, the_list_of_ranks_that_need_a_look_is_bounded_too) {
  auto rows = rows_of(1024);
  for (auto& w : rows) w.set_state("left");
  wire::ActorStatus st;
  list_workers(rows, st);
  EXPECT_EQ(static_cast<size_t>(st.workers_size()), status_workers_listed_max);
  EXPECT_EQ(st.workers(0).rank(), 0);
  EXPECT_EQ(st.metrics().at("coordination_workers_left"), 1024.0);
}

}  // namespace
}  // namespace lifeboat
