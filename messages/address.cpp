#include "messages/address.hpp"

namespace lifeboat {

std::string host_port(std::string_view host, uint16_t port) {
  auto port_text = std::to_string(port);
  if (host.find(':') != std::string_view::npos) return "[" + std::string{host} + "]:" + port_text;
  return std::string{host} + ":" + port_text;
}

}  // namespace lifeboat
