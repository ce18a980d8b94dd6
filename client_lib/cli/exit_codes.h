// fencectl's exit codes (sysexits.h where one fits, the shell's for a command that cannot run);
// `fencectl --help` and docs/clients.md list them.
#pragma once

namespace fencekeeper {

constexpr int kExitUnhealthy = 1;        // fencectl health: not 200, or no answer; get: not 200
constexpr int kExitInvalid = 1;          // fencectl valid: the lease is not held and valid now
constexpr int kExitUsage = 64;           // invalid arguments
constexpr int kExitUnavailable = 69;     // sidecar unreachable
constexpr int kExitInternal = 70;        // the supervisor could not start, or died
constexpr int kExitNotAcquired = 75;     // not acquired within --wait
constexpr int kExitLeaseLost = 76;       // lease lost (or not renewed) while CMD ran
constexpr int kExitCannotExecute = 126;  // CMD found but not executable
constexpr int kExitNotFound = 127;       // CMD not found
constexpr int kExitSignalBase = 128;     // + N: CMD killed by signal N, or fencectl's signal N
                                         // while it waited for the lock

}  // namespace fencekeeper
