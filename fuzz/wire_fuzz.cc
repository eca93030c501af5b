// Tutti's wire on arbitrary bytes: the frame splitter a connection runs on
// its reads, and every internal-protocol message a frame may carry.
#include <cstddef>
#include <cstdint>

#include "tutti/net/wire.h"
#include "tutti/proto/tutti_internal.pb.h"

namespace {

template <typename Message>
void Parse(const char* data, size_t size) {
  Message m;
  if (m.ParseFromArray(data, static_cast<int>(size))) (void)m.SerializeAsString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace pb = tutti::internal;
  int frames = 0;
  (void)tutti::SplitFrames(reinterpret_cast<const char*>(data), size, [&](const char* payload, size_t n) {
    switch (frames++ % 6) {
      case 0: Parse<pb::FrontendUp>(payload, n); break;
      case 1: Parse<pb::FrontendDown>(payload, n); break;
      case 2: Parse<pb::BackendUp>(payload, n); break;
      case 3: Parse<pb::BackendDown>(payload, n); break;
      case 4: Parse<pb::FeedDown>(payload, n); break;
      default: Parse<pb::FeedUp>(payload, n); break;
    }
    return true;
  });
  return 0;
}
