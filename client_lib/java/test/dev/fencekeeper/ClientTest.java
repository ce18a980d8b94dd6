package dev.fencekeeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Java client against a real sidecar and ZooKeeper, which tests/python/test_java_client.py
 * starts and names: FENCEKEEPER_SOCKET, FK_ZK_CONNECT (kazoo deletes a holder's node behind its
 * back) and FK_ZK_PIDS (to freeze ZooKeeper). The freeze runs last: its aftermath (the session
 * may expire once ZooKeeper thaws, losing whatever is held then) is no other test's business.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClientTest {
  static final long BOUND_S = 15; // every wait below is bounded by it

  Client client;

  @BeforeEach
  void connect() throws Exception {
    client = Client.connect(Path.of(System.getenv("FENCEKEEPER_SOCKET")));
  }

  @AfterEach
  void close() {
    client.close();
  }

  static void deleteBehindItsBack(String name) throws Exception {
    String script = String.join("\n",
        "import sys",
        "from kazoo.client import KazooClient",
        "zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)",
        "path = '/fencekeeper/locks/' + sys.argv[2]",
        "for child in zk.get_children(path):",
        "    zk.delete(path + '/' + child)",
        "zk.stop(); zk.close()");
    Process p = new ProcessBuilder("/usr/bin/python3", "-c", script, System.getenv("FK_ZK_CONNECT"),
                                   name).inheritIO().start();
    assertTrue(p.waitFor(BOUND_S, TimeUnit.SECONDS) && p.exitValue() == 0, "kazoo delete");
  }

  static void signalZooKeeper(String signal) throws Exception {
    for (String pid : System.getenv("FK_ZK_PIDS").trim().split("\\s+")) {
      Process p = new ProcessBuilder("kill", "-" + signal, pid).inheritIO().start();
      assertTrue(p.waitFor(BOUND_S, TimeUnit.SECONDS) && p.exitValue() == 0, "kill " + pid);
    }
  }

  @Test
  void aLeaseHasATokenAndTheNextHolderALargerOne() throws Exception {
    long first;
    try (Lease lease = client.lock("java/tokens", LockOptions.defaults().owner("java-first"))) {
      first = lease.token();
      assertTrue(first > 0 && lease.validFor().toMillis() > 0);
      HolderInfo info = client.holder("java/tokens");
      assertEquals("java-first", info.holders().get(0).owner());
      assertEquals(first, info.holders().get(0).token());
      FencekeeperException busy = assertThrows(FencekeeperException.class,
          () -> client.tryLock("java/tokens", LockOptions.defaults()));
      assertEquals(ErrorCode.TIMED_OUT, busy.code());
      lease.renew(Duration.ZERO);
    }
    try (Lease next = client.tryLock("java/tokens", LockOptions.defaults())) {
      assertTrue(next.token() > first);
    }
  }

  @Test
  void errorsAreTyped() throws Exception {
    FencekeeperException bad = assertThrows(FencekeeperException.class,
        () -> client.tryLock("java/../bad", LockOptions.defaults()));
    assertEquals(ErrorCode.INVALID_NAME, bad.code());
    try (Lease permit = client.lock("java/pool", LockOptions.defaults().permits(2))) {
      FencekeeperException conflict = assertThrows(FencekeeperException.class,
          () -> client.tryLock("java/pool", LockOptions.defaults().permits(3)));
      assertEquals(ErrorCode.MODE_CONFLICT, conflict.code());
      assertTrue(conflict.getMessage().contains("2 permits"), conflict.getMessage());
    }
  }

  @Test
  void interruptingALockWithdrawsIt() throws Exception {
    try (Lease holder = client.lock("java/interrupt", LockOptions.defaults())) {
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          client.lock("java/interrupt", LockOptions.defaults());
        } catch (Throwable t) {
          outcome.set(t);
        }
      });
      waiter.start();
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
      while (client.holder("java/interrupt").waiters() == 0 && System.nanoTime() < until) {
        Thread.sleep(10);
      }
      waiter.interrupt();
      waiter.join(TimeUnit.SECONDS.toMillis(BOUND_S));
      assertTrue(outcome.get() instanceof InterruptedException, String.valueOf(outcome.get()));
      assertEquals(0, client.holder("java/interrupt").waiters());
    }
  }

  @Test
  void cancellingALockFutureWithdrawsIt() throws Exception {
    // Many rounds: cancel() once raced the waiter thread, which could complete the future first.
    try (Lease holder = client.lock("java/future", LockOptions.defaults())) {
      for (int round = 0; round < 50; round++) {
        CompletableFuture<Lease> waiting = client.lockAsync("java/future", LockOptions.defaults());
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
        while (client.holder("java/future").waiters() == 0 && System.nanoTime() < until) {
          Thread.sleep(1);
        }
        assertFalse(waiting.isDone(), () -> "done before the cancel: " + waiting.handle(
            (lease, error) -> lease != null ? "granted " + lease.token() : String.valueOf(error))
            .join());
        assertTrue(waiting.cancel(true), "round " + round);
        assertThrows(CancellationException.class, waiting::join);
        until = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
        while (client.holder("java/future").waiters() != 0 && System.nanoTime() < until) {
          Thread.sleep(1);
        }
        assertEquals(0, client.holder("java/future").waiters(), "round " + round);
      }
    }
  }

  @Test
  void aLossCompletesTheLostFuture() throws Exception {
    Lease lease = client.lock("java/loss", LockOptions.defaults());
    assertFalse(lease.lost().isDone());
    deleteBehindItsBack("java/loss");
    long deleted = System.nanoTime();
    assertEquals(LossReason.RELEASED_ELSEWHERE, lease.lost().get(BOUND_S, TimeUnit.SECONDS));
    System.out.printf("lost() completed %d us after kazoo's delete returned%n",
                      (System.nanoTime() - deleted) / 1000);
    FencekeeperException lost = assertThrows(FencekeeperException.class, lease::close);
    assertEquals(ErrorCode.LOST, lost.code());
  }

  @Test
  @Order(Integer.MAX_VALUE)
  void aFrozenZooKeeperIsAtRiskBeforeTheLoss() throws Exception {
    try (Lease lease = client.lock("java/jeopardy", LockOptions.defaults())) {
      List<String> heard = new CopyOnWriteArrayList<>();
      lease.addAtRiskListener(risk -> heard.add(risk.atRisk() ? "risk" : "safe"));
      lease.lost().thenRun(() -> heard.add("lost"));
      signalZooKeeper("STOP");
      try {
        lease.lost().get(BOUND_S, TimeUnit.SECONDS);
      } finally {
        signalZooKeeper("CONT");
      }
      assertEquals(List.of("risk", "lost"), List.copyOf(heard));
    } catch (FencekeeperException expected) {
      assertEquals(ErrorCode.LOST, expected.code()); // the close of the lost lease
    }
    // The sidecar vouches again once ZooKeeper answers: a new lease is granted.
    try (Lease again = client.lock("java/jeopardy",
                                   LockOptions.defaults().waitFor(Duration.ofSeconds(BOUND_S)))) {
      assertNotNull(again);
    }
  }

  @Test
  void holderWatchesAndElections() throws Exception {
    List<Client.HolderChange> changes = new CopyOnWriteArrayList<>();
    try (AutoCloseable watch = client.watchHolder("java/leader", changes::add)) {
      Election election = client.election("java/leader", "java-node-a");
      try (Lease leading = election.campaign()) {
        assertEquals("java-node-a", election.leader().holders().get(0).owner());
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
        while (changes.stream().noneMatch(c -> c.state() == Client.HolderState.HELD)
               && System.nanoTime() < until) {
          Thread.sleep(10);
        }
      }
      assertTrue(changes.stream().anyMatch(c -> c.state() == Client.HolderState.HELD
                                                && c.info().holders().get(0).owner().equals("java-node-a")),
                 changes.toString());
    }
  }
}
