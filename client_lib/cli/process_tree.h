// What is alive of the processes CMD started, read from /proc. A zombie counts as dead: nobody
// may reap it (PID 1 in a container may not), and it runs nothing.
//
// CMD's processes are the descendants of a subreaper `root` (the supervisor): orphans and what
// left CMD's group with setsid are re-parented to it. Going by descent, not by process group,
// also never signals a stranger that reuses the number of CMD's emptied group.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace fencekeeper {

// The live descendants of `root`, not `root` itself.
std::vector<pid_t> liveDescendants(pid_t root);

// SIGKILL to all of liveDescendants(root), again until none is alive.
void killTree(pid_t root);

// SIGTERM (and SIGCONT, so that a stopped process sees it) to all of liveDescendants(root), then
// killTree() once `patience` has passed with some of them still alive.
void endTree(pid_t root, std::chrono::milliseconds patience);

}  // namespace fencekeeper
