// Giving freed memory back to the system after a burst.
//
// The neardup binary allocates with tcmalloc, which keeps the pages of freed blocks for reuse:
// after a burst (a Tier 2 request frame of hundreds of megabytes, read and answered), the process
// would stay that large while idle. ReturnFreeMemory asks the allocator to release free pages.
//
// Thread safety: callable from any thread.
#pragma once

#include <cstddef>

namespace neardup {

// Asks the allocator to return up to `bytes` of its free memory to the system (tcmalloc's
// ReleaseToSystem). Nothing where the process does not run on tcmalloc (the tests, the sanitizer
// builds): glibc's malloc already returns large blocks (mmap) when they are freed.
void ReturnFreeMemory(size_t bytes);

}  // namespace neardup
