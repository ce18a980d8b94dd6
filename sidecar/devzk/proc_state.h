// What /proc says about a process: for stopping, freezing and checking on processes that may not
// be this one's children (a detached server, a grandchild).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace fencekeeper::devzk {

// The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), or 0 when there is no such pid.
char procState(pid_t pid);
// Gone: no such process, or a zombie (its sockets are closed; its parent may be a PID 1 that
// never reaps).
bool processGone(pid_t pid);
// True once every thread of `pid` is stopped (after SIGSTOP), so a frozen process really is
// silent; false at the deadline or when there is no such process.
bool waitAllThreadsStopped(pid_t pid, std::chrono::steady_clock::time_point deadline);
// A KiB figure of /proc/PID/status: "VmRSS" (resident), "RssAnon" (the heap and stacks, without
// mapped files such as the lease table); 0 when there is no such process or field.
long procStatusKiB(pid_t pid, const std::string& field);

}  // namespace fencekeeper::devzk
