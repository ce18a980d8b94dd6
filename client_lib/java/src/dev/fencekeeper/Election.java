package dev.fencekeeper;

/**
 * Leader election on a lock's queue (kazoo's Election on the same path takes its turn in it):
 * {@link #campaign()} stands until this one leads and returns the leader's lease, whose token
 * fences what the leader writes; {@link #leader()} says who leads now.
 */
public final class Election {
  private final Client client;
  private final String name;
  private final String owner;

  Election(Client client, String name, String owner) {
    this.client = client;
    this.name = name;
    this.owner = owner;
  }

  /** Blocks until this campaign leads (Thread.interrupt() withdraws it). */
  public Lease campaign() throws FencekeeperException, InterruptedException {
    return client.lock(name, LockOptions.defaults().owner(owner).waitFor(LockOptions.WAIT_FOREVER));
  }

  public HolderInfo leader() throws FencekeeperException {
    return client.holder(name);
  }
}
