#pragma once

#include <string>

namespace lifeboat {

/// The HTML of GET /: a self-contained page that fetches /status every
/// second and shows rank, phase, step, the last checkpoint, the actors and,
/// on the coordinator, the workers. Rows it fills carry `data-actor` and
/// `data-rank` attributes so that a headless browser test can find them.
const std::string& status_page_html();

}  // namespace lifeboat
