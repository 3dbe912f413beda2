#include "common/free_memory.h"

// gperftools' C interface, resolved only when the process loaded tcmalloc (the neardup binary
// links it; nothing else does): weak, so a process without it sees a null function.
extern "C" void MallocExtension_ReleaseToSystem(size_t num_bytes) __attribute__((weak));

namespace neardup {

void ReturnFreeMemory(size_t bytes) {
  if (MallocExtension_ReleaseToSystem != nullptr) MallocExtension_ReleaseToSystem(bytes);
}

}  // namespace neardup
