#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

/// Expands a SLURM hostlist ("node[01-04,07]", "a,b[1-2]", "rack[1-2]-gpu[1-2]")
/// into host names in order, keeping zero padding. Malformed lists (unbalanced
/// brackets, a range that runs backwards, non-numeric bounds, an empty name, more
/// than 65536 hosts) are errc::invalid_config.
caf::expected<std::vector<std::string>> expand_slurm_nodelist(const std::string& nodelist);

}  // namespace lifeboat
