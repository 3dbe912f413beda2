// Thread priorities: the embedded pipeline's critical path is one thread (the tiers'), and on a
// small machine the work that runs ahead of it (signing) or behind it (LevelDB's compactions) takes
// cores it waits for (storage/leveldb_threads.h does the same for LevelDB's thread). Lowering those threads' priority gives the cores to the critical path when
// they are contended and costs nothing when they are idle.
//
// Linux schedules threads individually: a thread's nice value is its own, and threads it creates
// afterwards inherit it. A thread can lower its own priority but, without privileges, never raise
// it again, so only threads that live for the lowered work should be lowered.
//
// Threads are also named (NameThisThread) so that `top -H`, `perf report --sort comm` and gdb show
// which stage of the pipeline a thread runs.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup {

// Sets the calling thread's nice value to the process's (its main thread's) plus `delta`, capped at
// 19. delta <= 0 does nothing. Errors: InvalidArgument for delta > 19; IoError when the system
// refuses (named).
Status LowerThreadPriority(int delta);

// The calling thread's nice value (for tests and logs).
int ThreadNiceValue();

// Names the calling thread (as the kernel shows it: /proc/self/task/<tid>/comm); names longer than
// the kernel's 15 bytes are cut. Failures are ignored: a name is only a label.
void NameThisThread(std::string_view name);

// The calling thread's name (for tests).
std::string ThisThreadName();

}  // namespace neardup
