#pragma once

// The body of the GCE, AWS and Azure fuzz targets: the notice source of
// `spec` polls a canned_http_server that answers its requests with the fuzz
// input's replies (status line, headers and body each), so they go through the HTTP
// response parser and then the source's own parsing of the reply (JSON
// documents, timestamps, header values) exactly as a metadata server's reply.

#include <chrono>
#include <cstdint>
#include <string>

#include "platform/notice_source.hpp"
#include "tests/fuzz/canned_http_server.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace lifeboat::fuzz {

/// Long enough for a loopback exchange under the sanitizers, short enough
/// that a reply the client waits on (an unfinished body) costs little.
constexpr std::chrono::milliseconds metadata_poll_wait{250};

inline int poll_metadata_source(const char* spec, const char* endpoint_variable,
                                const uint8_t* data, size_t size) {
  static canned_http_server server;
  static const std::string where = "127.0.0.1:" + std::to_string(server.port());
  server.set_replies(std::string(reinterpret_cast<const char*>(data), size));
  env_lookup env = [endpoint_variable](const char* name) -> const char* {
    return std::string{name} == endpoint_variable ? where.c_str() : nullptr;
  };
  // A fresh source per input: a source keeps the notice it found.
  auto source = make_notice_source(spec, env);
  if (!source) return 0;
  auto found = (*source)->poll(metadata_poll_wait);
  if (found && *found) (*source)->acknowledge();
  return 0;
}

}  // namespace lifeboat::fuzz
