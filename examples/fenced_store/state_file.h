// The fenced store's whole state (objects and fences) in one file of its data directory,
// replaced atomically and durably on every change: the value a request wrote and the fence it
// raised reach the disk together, or neither does. Every change rewrites the whole file: simple
// and plainly correct, at a cost that grows with the data (fine for small data, as here).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "examples/fenced_store/fence_gate.h"

namespace fencekeeper::store {

using Objects = std::map<std::string, std::string, std::less<>>;

struct StoreState {
  Objects objects;
  FenceGate::Fences fences;
};

// The file's bytes. Length-prefixed, so keys and values may hold any byte; an end marker
// catches a file cut short.
std::string encodeState(const Objects& objects, const FenceGate::Fences& fences);
std::optional<StoreState> decodeState(std::string_view bytes);

class StateFile {
 public:
  // Opens `dir`, which must exist: creating a missing one would silently start a store with no
  // fences after a typo in --data. Takes an exclusive lock on it, because two processes serving
  // one directory would each keep their own fences and let stale holders through. Returns
  // nullopt and sets `error` on failure.
  static std::optional<StateFile> open(const std::string& dir, std::string& error);

  // The saved state; an empty one when nothing was ever saved. nullopt (and `error`) when the
  // file can't be read or is corrupt: the caller must not start without its fences.
  std::optional<StoreState> load(std::string& error) const;

  // Writes a temporary file, fsyncs it, renames it over the state file and fsyncs the directory
  // (so the rename itself survives a crash). On failure the previous state file is intact,
  // unless only the directory fsync failed: then either version may be found after a crash.
  bool save(const Objects& objects, const FenceGate::Fences& fences, std::string& error);

 private:
  StateFile(std::string dir, UniqueFd dirFd, UniqueFd lockFd)
      : dir_(std::move(dir)), dirFd_(std::move(dirFd)), lockFd_(std::move(lockFd)) {}

  std::string dir_;
  UniqueFd dirFd_;
  UniqueFd lockFd_;  // holds the flock for the life of the process
};

}  // namespace fencekeeper::store
