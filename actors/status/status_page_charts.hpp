#pragma once

namespace lifeboat {

/// The page's pictures, drawn by the page itself as inline SVG from /rates,
/// /timeline and /checkpoints (actors/status/job_history.hpp): the markup
/// of their sections and the script that fills them once a second. Static
/// text; every value goes through textContent or an attribute, never markup.
const char* status_page_chart_sections();
const char* status_page_chart_script();

}  // namespace lifeboat
