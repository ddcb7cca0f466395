#pragma once

// What a worker receives when the process hosting its coordination service
// raises a notice (preemption_watcher::raise_notice), checked as its cluster
// watcher and step resolver read it.

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"

namespace lifeboat::test {

/// `msg` is that notice, from `source`: on the preemption protocol's
/// channel, from service_sender. Returns its deadline (unix ms; 0 where
/// `msg` is no notice, a failure of this check).
inline int64_t expect_raised_notice(const peer_message& msg, const std::string& source) {
  EXPECT_EQ(msg.channel, protocol_channel);
  EXPECT_EQ(msg.from_rank, service_sender);
  wire::ProtocolMessage body;
  EXPECT_TRUE(body.ParseFromString(msg.payload));
  EXPECT_TRUE(body.has_notice());
  EXPECT_EQ(body.notice().rank(), service_sender);
  EXPECT_EQ(body.notice().source(), source);
  return body.notice().deadline_unix_ms();
}

}  // namespace lifeboat::test
