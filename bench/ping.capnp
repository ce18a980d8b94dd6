@0xde8ad191f3d19a11;
# Row 1d of fk_bench: the least a Cap'n Proto RPC call costs on this machine.

interface Ping {
  ping @0 () -> ();
}
