package dev.fencekeeper;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Who holds a lock: its holders, oldest first, and how many wait behind them. */
public record HolderInfo(boolean held, List<Holder> holders, int waiters) {
  static HolderInfo of(Native.HolderInfo info) {
    List<Holder> holders = new ArrayList<>();
    for (int i = 0; i < info.holdersListed; i++) {
      Native.HolderEntry h = info.holders[i];
      holders.add(new Holder(h.token, Native.text(h.ownerLabel), Instant.ofEpochMilli(h.sinceUnixMs),
                             h.thisSidecar != 0, LockMode.values()[h.mode], h.permits));
    }
    return new HolderInfo(info.held != 0, List.copyOf(holders), info.waiters);
  }
}
