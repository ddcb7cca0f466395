// The status page (actors/status/status_page.cpp) as a browser renders it: headless
// Chromium loads GET / from a real endpoint, runs the page's script and must
// show the workers and actors that /status reports.

#include "actors/status/status_page.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/actors/status/status_endpoint_fixture.hpp"
#include "tests/actors/status/status_test_support.hpp"
#include "tests/support/headless_chromium.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Chromium starts slowly on a loaded machine; this bounds a hung one.
constexpr auto browser_timeout = 90s;
// Keeps the screenshot there instead of in a temporary directory.
constexpr const char* screenshot_dir_env = "LIFEBOAT_STATUS_SCREENSHOT_DIR";
// A blank 1200x800 page compresses to a few KiB; the rendered page is larger.
constexpr std::uintmax_t min_screenshot_bytes = 20 * 1024;

TEST(status_page, renders_everything_through_text_content) {
  const auto& html = status_page_html();
  for (const char* part :
       {"<!DOCTYPE html>", "id=\"actors\"", "id=\"workers\"", "id=\"phase\"", "id=\"step\"",
        "id=\"checkpoint\"", "fetch(\"/status\"", "setInterval(refresh, 1000)"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(html.find("innerHTML"), std::string::npos);
}

class status_page_browser_test : public test::status_endpoint_fixture {
 protected:
  void SetUp() override {
    chromium_ = test::find_in_path(test::chromium_name);
    if (chromium_.empty()) GTEST_SKIP() << test::chromium_missing;
    char templ[] = "/tmp/lifeboat-status-page-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    tmp_ = templ;
    start(test::saving_cluster());
    url_ = "http://127.0.0.1:" + std::to_string(port_) + "/";
  }

  void TearDown() override {
    status_endpoint_fixture::TearDown();
    if (!tmp_.empty()) fs::remove_all(tmp_);
  }

  // Runs headless Chromium with a fresh profile on the page plus `extra`.
  test::process_result browse(std::vector<std::string> extra) {
    auto profile = tmp_ / ("profile" + std::to_string(runs_++));
    auto argv = test::chromium_command(chromium_, profile.string(), url_, extra);
    return test::run_process(argv, browser_timeout);
  }

  std::string chromium_;
  std::string url_;
  fs::path tmp_;
  int runs_ = 0;
};

TEST_F(status_page_browser_test, script_fills_the_workers_and_actors_tables) {
  auto run = browse({"--dump-dom"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto& dom = run.out;
  for (const char* part : {
           R"(<tr data-rank="0"><td class="num">0</td><td class="num">120</td>)",
           R"(<tr data-rank="1"><td class="num">1</td><td class="num">119</td>)",
           R"(<td class="num">16 ms ago</td><td class="ok">alive</td>)",
           R"(<td class="ok">alive</td><td class="warn">checkpoint_scheduled</td></tr>)",
           R"(<tr data-actor="step_resolver"><td>step_resolver</td><td class="ok">running</td>)",
           R"(<tr data-actor="status_endpoint">)",
           R"(<div class="value" id="phase">saving</div>)",
           R"(<div class="value" id="step">120</div>)",
           R"(id="checkpoint" title="/ckpt/step-100">step 100)",
           "0.75 s \u00b7 memory + peer + directory</div>",
           R"(id="restored" title="/dev/shm/job/step-40">step 40 )",
           R"(from memory in 0.50 s</div>)",
           R"(<div id="error"></div>)",
       }) {
    EXPECT_NE(dom.find(part), std::string::npos) << part << "\n" << dom;
  }
}

TEST_F(status_page_browser_test, takes_a_non_trivial_screenshot) {
  const char* keep = std::getenv(screenshot_dir_env);
  auto png = (keep != nullptr ? fs::path{keep} : tmp_) / "status-page.png";
  auto run = browse({"--screenshot=" + png.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(fs::exists(png)) << run.err;
  std::ifstream in{png, std::ios::binary};
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
  EXPECT_GT(fs::file_size(png), min_screenshot_bytes);
}

}  // namespace
}  // namespace lifeboat
