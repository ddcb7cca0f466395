// The only translation unit that includes Boost.Beast: it is slow to compile,
// so the rest of lifeboat sees the small interface in http_client.hpp.
#include "platform/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <strings.h>

#include "messages/errors.hpp"
#include "platform/host_resolver.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Metadata replies are a few bytes to a few KiB; anything this large is garbage.
constexpr uint64_t kMaxBodyBytes = 1 << 20;
constexpr unsigned kHttpVersion = 11;

struct exchange {
  beast::error_code error;
  const char* stage = "connect";
  bool finished = false;
};

caf::error transport_error(const http_request& request, std::chrono::milliseconds timeout,
                           const exchange& result) {
  auto where = request.method + " " + endpoint{request.host, request.port}.to_string() +
               request.target + ": ";
  if (!result.finished || result.error == beast::error::timeout ||
      result.error == asio::error::operation_aborted)
    return make_error(errc::timeout, where + "no reply within " + std::to_string(timeout.count()) +
                                         " ms (during " + result.stage + ")");
  return make_error(errc::unavailable, where + result.stage + " failed: " + result.error.message());
}

}  // namespace

std::optional<std::string> http_response::header(std::string_view name) const {
  for (auto& h : headers)
    if (h.name.size() == name.size() && strncasecmp(h.name.data(), name.data(), name.size()) == 0)
      return h.value;
  return std::nullopt;
}

caf::expected<http_response> http_send(const http_request& request,
                                       std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Also the Host header, which names an IPv6 address in brackets (RFC 9110).
  auto where = endpoint{request.host, request.port}.to_string();
  auto addresses = resolve_host(request.host, timeout);
  if (!addresses)
    return wrap_error(static_cast<errc>(addresses.error().code()), where, addresses.error());
  std::vector<tcp::endpoint> endpoints;
  for (auto& text : *addresses) {
    beast::error_code ec;
    auto address = asio::ip::make_address(text, ec);
    if (!ec) endpoints.emplace_back(address, request.port);
  }
  auto verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown)
    return make_error(errc::invalid_argument, "unknown HTTP method '" + request.method + "'");

  http::request<http::string_body> message{verb, request.target, kHttpVersion};
  message.set(http::field::host, where);
  for (auto& h : request.headers) message.set(h.name, h.value);
  message.body() = request.body;
  message.prepare_payload();

  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  exchange result;
  // One absolute deadline for connect, write and read together: the stream
  // closes itself and fails the pending operation when it passes.
  stream.expires_at(deadline);
  stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
    if (ec) {
      result = {ec, "connect", true};
      return;
    }
    result.stage = "write";
    http::async_write(stream, message, [&](beast::error_code ec, std::size_t) {
      if (ec) {
        result = {ec, "write", true};
        return;
      }
      result.stage = "read";
      // The header alone first: Beast 1.74 parses eagerly on past a
      // Content-Length over the body limit when the body came in the same
      // packet, and then reserves that length: a reply claiming 10 TB threw
      // std::bad_alloc out of a notice source's poll (found by fuzz_azure).
      // Read without eagerness, the header stops at the limit's error.
      http::async_read_header(stream, buffer, parser, [&](beast::error_code ec, std::size_t) {
        if (ec) {
          result = {ec, "read", true};
          return;
        }
        http::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) {
          result = {ec, "read", true};
        });
      });
    });
  });
  io.run_until(deadline);
  if (!result.finished) {
    // The stream's timer fires at the deadline too; this only makes sure the
    // handlers (which reference this frame) have all run before returning.
    beast::error_code ignored;
    stream.socket().close(ignored);
    io.restart();
    io.run();
  }
  if (!result.finished || result.error) return transport_error(request, timeout, result);

  auto& reply = parser.get();
  http_response response;
  response.status = static_cast<int>(reply.result_int());
  for (auto& field : reply)
    response.headers.push_back({std::string{field.name_string()}, std::string{field.value()}});
  response.body = std::move(reply.body());
  return response;
}

}  // namespace lifeboat
