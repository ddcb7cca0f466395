#include "apps/command_line.hpp"

#include <iostream>
#include <memory>

#include "platform/text_parse.hpp"

namespace lifeboat::apps {

namespace {

// CLI11's help with our synopsis in place of its generated "Usage:" line,
// which cannot show that some flags go together or that a command follows "--".
class synopsis_formatter final : public CLI::Formatter {
 public:
  explicit synopsis_formatter(std::string synopsis) : synopsis_(std::move(synopsis)) {}

  std::string make_usage(const CLI::App*, std::string) const override { return synopsis_; }

  const std::string& synopsis() const { return synopsis_; }

 private:
  std::string synopsis_;
};

}  // namespace

void configure_app(CLI::App& app, std::string synopsis, std::string footer) {
  app.formatter(std::make_shared<synopsis_formatter>(std::move(synopsis)));
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(std::move(footer));
}

CLI::Validator integer_in(int64_t min, int64_t max) {
  auto range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator{[min, max, range](std::string& text) -> std::string {
                          auto value = parse_integer(text, "", min, max);
                          if (!value)
                            return "expects an integer in " + range + ", got '" + text + "'";
                          text = std::to_string(*value);
                          return {};
                        },
                        range};
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e.what());
  }
}

int usage_error(const CLI::App& app, const std::string& error) {
  std::cerr << app.get_name() << ": " << error << "\n";
  if (auto formatter = std::dynamic_pointer_cast<synopsis_formatter>(app.get_formatter()))
    std::cerr << formatter->synopsis();
  return usage_exit_code;
}

}  // namespace lifeboat::apps
