// Frames between the tiers: a 12-byte header, then a Protobuf body (proto/cluster.proto).
//
//   header: magic "ND" (2 bytes), protocol version (u16), message type (u16), flags (u16, 0),
//           body length (u32); all big-endian.
//
// A reader decodes the header first and checks the body's length against the maximum of its
// message type before it allocates anything, so a peer cannot make it reserve more than that.
//
//   std::string frame;
//   EncodeFrame(MessageType::kTier2Request, request, &frame);       // header + body
//   ASSIGN_OR_RETURN(FrameHeader h, DecodeFrameHeader(frame.data()));
//   RETURN_IF_ERROR(DecodeFrameBody(h, std::string_view(frame).substr(kFrameHeaderBytes), &request));
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/message_lite.h>

#include "common/status.h"

namespace neardup::cluster {

constexpr size_t kFrameHeaderBytes = 12;
// This build's protocol version. A peer's frames are accepted from kOldestProtocolVersion on (one
// version older: a rolling upgrade), and answered in the version they came in.
constexpr uint16_t kProtocolVersion = 1;
constexpr uint16_t kOldestProtocolVersion = 1;

enum class MessageType : uint16_t {
  kTier2Request = 1,
  kTier2Response = 2,
};

// The largest body each type may have: a batch of compared pages is large (tier2.max_batch_pages
// signatures of a few KB), everything else small.
uint32_t MaxBodyBytes(MessageType type);

struct FrameHeader {
  uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kTier2Request;
  uint32_t length = 0;  // of the body
};

// Appends a frame of `message` to *out (version: kProtocolVersion unless given).
// InvalidArgument when the body would pass MaxBodyBytes(type).
Status EncodeFrame(MessageType type, const google::protobuf::MessageLite& message, std::string* out,
                   uint16_t version = kProtocolVersion);

// Decodes the kFrameHeaderBytes at `bytes`. InvalidArgument, naming what is wrong, for a bad
// magic, a version outside [kOldestProtocolVersion, kProtocolVersion], an unknown type, flags
// set, or a length over the type's maximum.
StatusOr<FrameHeader> DecodeFrameHeader(const char* bytes);

// Parses a body of header.length bytes into *message. InvalidArgument when the size differs from
// the header's or the bytes are not a valid message.
Status DecodeFrameBody(const FrameHeader& header, std::string_view body, google::protobuf::MessageLite* message);

}  // namespace neardup::cluster
