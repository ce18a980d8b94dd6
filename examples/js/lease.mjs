// A fenced lease from the fencekeeper sidecar in JavaScript (Node, capnp-es), straight over the
// sidecar's Cap'n Proto socket (docs/protocol.md): acquire with a loss watcher, read the token
// and validity, renew, ask who holds the lock, release. Prints one JSON line per step.
//
//   cd examples/js && npm ci && node lease.mjs [--socket PATH] [--name LOCK] [--ttl-ms N]
//
// Loss is fatal to the work in hand: when the watcher's lost() arrives, or the connection
// closes (no lost() is sent then), stop at once; storage that checks tokens rejects what a stale
// holder still sends.
import net from "node:net";
import { Conn } from "capnp-es";
import { Error as FkError, LeaseWatcher, Sidecar } from "./gen/fencekeeper.js";
import { SocketTransport } from "./socket_transport.mjs";

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const socketPath = option("--socket", process.env.FENCEKEEPER_SOCKET || "/run/fencekeeper/fencekeeper.sock");
const name = option("--name", "js/example");
const ttlMs = Number(option("--ttl-ms", "10000"));
const errorName = (code) => Object.keys(FkError).find((k) => FkError[k] === code) ?? String(code);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));

function check(results, step) {
  if (results.error !== FkError.OK) {
    throw new Error(`${step}: ${errorName(results.error)}: ${results.detail}`);
  }
  return results;
}

const socket = net.createConnection(socketPath);
await new Promise((resolve, reject) => {
  socket.once("connect", resolve);
  socket.once("error", reject);
});
const conn = new Conn(new SocketTransport(socket));
const sidecar = conn.bootstrap(Sidecar);
let lost = false;
socket.on("close", () => {
  if (!lost) say("connection closed", { lost: true }); // no lost() comes over a closed connection
});

const watcher = new LeaseWatcher.Server({
  async lost(params) {
    lost = true;
    say("lost", { token: String(params.token), reason: params.reason });
  },
});
const granted = check(
  await sidecar
    .acquire((p) => {
      p.name = name;
      p.ttlMs = ttlMs;
      p.waitMs = 10000;
      p.ownerLabel = "js-example";
      p.watcher = watcher.client();
    })
    .promise(),
  "acquire",
);
const lease = granted.lease;
say("acquired", { name, token: String(granted.token), validMs: granted.validMs });

const renewed = check(await lease.renew((p) => { p.ttlMs = 0; }).promise(), "renew");
say("renewed", { validMs: renewed.validMs });

const held = check(await sidecar.holder((p) => { p.name = name; }).promise(), "holder");
say("holder", {
  held: held.info.held,
  token: String(held.info.token),
  ownerLabel: held.info.ownerLabel,
});

const released = check(await lease.release(() => {}).promise(), "release");
say("released", { confirmed: released.confirmed });
lost = true; // closing now is ours, not a loss
socket.end();
