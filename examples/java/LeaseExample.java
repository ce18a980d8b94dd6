// A fenced lease from Java: the work is cancelled by the loss (Lease.lost()), carries the token to
// the storage, and a jeopardy report says when to checkpoint.
//
//   javac -cp /usr/local/share/java/fencekeeper.jar:/usr/share/java/jna.jar LeaseExample.java
//   java -cp .:/usr/local/share/java/fencekeeper.jar:/usr/share/java/jna.jar LeaseExample [SOCKET]
import dev.fencekeeper.Client;
import dev.fencekeeper.FencekeeperException;
import dev.fencekeeper.Lease;
import dev.fencekeeper.LockOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

public final class LeaseExample {
  public static void main(String[] args) throws Exception {
    Path socket = args.length > 0 ? Path.of(args[0]) : null;
    try (Client client = Client.connect(socket);
         Lease lease = client.lock("examples/java", LockOptions.defaults()
             .ttl(Duration.ofSeconds(10)).waitFor(Duration.ofSeconds(5)).owner("java-example"))) {
      lease.addAtRiskListener(risk -> System.out.println("at risk, checkpointing; left " + risk.left()));
      // The work, cancelled the moment the lease is lost; it sends lease.token() to storage.
      CompletableFuture<Void> work = CompletableFuture.runAsync(() -> {});
      lease.lost().thenRun(() -> work.cancel(true));
      work.get(5, TimeUnit.SECONDS);
      System.out.println("java: token " + lease.token() + ", valid for "
                         + lease.validFor().toSeconds() + " s");
    } catch (FencekeeperException e) {
      System.err.println(e.code() + ": " + e.getMessage());
      System.exit(75);
    }
  }
}
