#include "platform/slurm_nodelist.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

using hosts = std::vector<std::string>;

TEST(slurm_nodelist, expands_names_ranges_and_lists) {
  struct row {
    std::string list;
    hosts expected;
  };
  std::vector<row> table{
      {"node01", {"node01"}},
      {"node[01-04,07]", {"node01", "node02", "node03", "node04", "node07"}},
      {"a,b[1-2]", {"a", "b1", "b2"}},
      {"gpu[9-11]", {"gpu9", "gpu10", "gpu11"}},
      {"r[1-2]-n[1-2]", {"r1-n1", "r1-n2", "r2-n1", "r2-n2"}},
      {"x[3]y,z", {"x3y", "z"}},
  };
  for (auto& r : table) {
    auto expanded = expand_slurm_nodelist(r.list);
    ASSERT_TRUE(expanded) << r.list << ": " << describe(expanded.error());
    EXPECT_EQ(*expanded, r.expected) << r.list;
  }
}

TEST(slurm_nodelist, refuses_malformed_lists) {
  for (std::string list : {"", "node[1-2", "node1-2]", "node[]", "node[a-b]", "node[5-1]", "a,,b",
                           "[1-2]", "n[1-99999999]"}) {
    auto expanded = expand_slurm_nodelist(list);
    ASSERT_FALSE(expanded) << "'" << list << "' was accepted";
    EXPECT_EQ(expanded.error(), make_error(errc::invalid_config));
    EXPECT_NE(describe(expanded.error()).find("SLURM_JOB_NODELIST='" + list + "'"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace lifeboat
