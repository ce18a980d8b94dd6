// What is alive of the processes CMD started, read from /proc. A zombie counts as dead: nobody
// may reap it (PID 1 in a container may not), and it runs nothing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace fencekeeper {

// The live processes of group `pgid` and the live descendants of `root` (not `root` itself): CMD's
// group and, under a subreaper `root`, whatever left that group (setsid) or lost its parent.
std::vector<pid_t> liveTree(pid_t root, pid_t pgid);

// SIGKILL to all of liveTree(root, pgid), again until none of it is alive.
void killTree(pid_t root, pid_t pgid);

// SIGTERM (and SIGCONT, so that a stopped process sees it) to all of liveTree(root, pgid), then
// killTree() once `patience` has passed with some of it still alive.
void endTree(pid_t root, pid_t pgid, std::chrono::milliseconds patience);

}  // namespace fencekeeper
