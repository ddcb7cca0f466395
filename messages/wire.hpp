#pragma once

// Lets every generated protobuf message travel inside CAF messages: CAF finds
// this inspect() by argument-dependent lookup in the messages' namespace and
// (de)serializes the message through its own binary encoding.

#include <string>
#include <type_traits>

#include <google/protobuf/message.h>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/errors.hpp"

namespace lifeboat::wire {

template <class T>
constexpr bool is_proto_message_v = std::is_base_of<google::protobuf::Message, T>::value;

template <class Inspector, class T>
std::enable_if_t<is_proto_message_v<T>, typename Inspector::result_type> inspect(Inspector& f,
                                                                                 T& x) {
  std::string bytes;
  const char* name = T::descriptor()->full_name().c_str();
  if constexpr (Inspector::reads_state) {
    x.SerializeToString(&bytes);
    return f(caf::meta::type_name(name), bytes);
  } else {
    auto load = caf::meta::load_callback([&]() -> caf::error {
      if (!x.ParseFromString(bytes)) return make_error(errc::corrupt, std::string{"bad "} + name);
      return caf::none;
    });
    return f(caf::meta::type_name(name), bytes, load);
  }
}

}  // namespace lifeboat::wire
