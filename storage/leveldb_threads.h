// LevelDB's background thread (Env::Default(): the compactions of every LevelDB database in the
// process) lowered and named like the pipeline's own threads (common/thread_priority.h), so that a
// critical path gets the cores and `top -H` shows which thread is LevelDB's.
//
// Thread safety: both functions may be called from any thread.
#pragma once

namespace neardup {

// Lowers LevelDB's background thread's nice value by `delta` (as LowerThreadPriority), done on that
// thread by its next scheduled task; the first call with delta > 0 in the process decides, later
// ones do nothing (the thread lives as long as the process). Failures are logged at debug level:
// the thread runs on at its priority.
void LowerLevelDbBackgroundPriority(int delta);

// Names LevelDB's background thread "nd-leveldb" (once per process, like the above).
void NameLevelDbBackgroundThread();

}  // namespace neardup
