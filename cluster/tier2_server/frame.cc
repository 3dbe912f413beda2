#include "cluster/tier2_server/frame.h"

#include "common/coding.h"

namespace neardup::cluster {
namespace {

constexpr char kMagic[2] = {'N', 'D'};

const char* TypeName(MessageType type) {
  switch (type) {
    case MessageType::kTier2Request: return "tier2 request";
    case MessageType::kTier2Response: return "tier2 response";
  }
  return "unknown";
}

}  // namespace

uint32_t MaxBodyBytes(MessageType type) {
  switch (type) {
    case MessageType::kTier2Request:   // a batch to compare or stage: up to ~100k signatures
    case MessageType::kTier2Response:  // a comparison's pairs, a signature, stats
      return 1u << 30;
  }
  return 0;
}

Status EncodeFrame(MessageType type, const google::protobuf::MessageLite& message, std::string* out,
                   uint16_t version) {
  const size_t size = message.ByteSizeLong();
  if (size > MaxBodyBytes(type)) {
    return InvalidArgument(std::string("frame: a ") + TypeName(type) + " of " + std::to_string(size) +
                           " bytes is over the limit of " + std::to_string(MaxBodyBytes(type)));
  }
  const size_t at = out->size();
  out->resize(at + kFrameHeaderBytes + size);
  char* h = out->data() + at;
  h[0] = kMagic[0];
  h[1] = kMagic[1];
  StoreBigEndian(h + 2, version, 2);
  StoreBigEndian(h + 4, static_cast<uint16_t>(type), 2);
  StoreBigEndian(h + 6, 0, 2);
  StoreBigEndian(h + 8, size, 4);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(h + kFrameHeaderBytes));
  return Status::Ok();
}

StatusOr<FrameHeader> DecodeFrameHeader(const char* bytes) {
  if (bytes[0] != kMagic[0] || bytes[1] != kMagic[1]) return InvalidArgument("frame: bad magic (not a neardup peer)");
  FrameHeader h;
  h.version = static_cast<uint16_t>(ReadBigEndian(bytes + 2, 2));
  if (h.version < kOldestProtocolVersion || h.version > kProtocolVersion) {
    return InvalidArgument("frame: protocol version " + std::to_string(h.version) + " is not in " +
                           std::to_string(kOldestProtocolVersion) + ".." + std::to_string(kProtocolVersion));
  }
  const auto type = static_cast<uint16_t>(ReadBigEndian(bytes + 4, 2));
  if (type != static_cast<uint16_t>(MessageType::kTier2Request) &&
      type != static_cast<uint16_t>(MessageType::kTier2Response)) {
    return InvalidArgument("frame: unknown message type " + std::to_string(type));
  }
  h.type = static_cast<MessageType>(type);
  if (ReadBigEndian(bytes + 6, 2) != 0) return InvalidArgument("frame: unknown flags set");
  h.length = static_cast<uint32_t>(ReadBigEndian(bytes + 8, 4));
  if (h.length > MaxBodyBytes(h.type)) {
    return InvalidArgument(std::string("frame: a ") + TypeName(h.type) + " of " + std::to_string(h.length) +
                           " bytes is over the limit of " + std::to_string(MaxBodyBytes(h.type)));
  }
  return h;
}

Status DecodeFrameBody(const FrameHeader& header, std::string_view body, google::protobuf::MessageLite* message) {
  if (body.size() != header.length) {
    return InvalidArgument("frame: body of " + std::to_string(body.size()) + " bytes, the header says " +
                           std::to_string(header.length));
  }
  if (!message->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return InvalidArgument(std::string("frame: the body is not a valid ") + TypeName(header.type));
  }
  return Status::Ok();
}

}  // namespace neardup::cluster
