// A Cap'n Proto RPC transport for capnp-es over a Node socket (the sidecar's Unix socket): it
// frames messages as Cap'n Proto's standard stream (a segment table, then the segments), which
// is what the sidecar's two-party RPC speaks. capnp-es ships the RPC protocol, not a transport.
import { Message } from "capnp-es";
import { Message as RpcMessage } from "capnp-es/capnp/rpc";

export class SocketTransport {
  constructor(socket) {
    this.socket = socket;
    this.pending = Buffer.alloc(0);
    this.messages = []; // received, not asked for yet
    this.waiters = []; // recvMessage() calls waiting for a message
    this.error = null;
    socket.on("data", (chunk) => this.onData(chunk));
    socket.on("close", () => this.fail(new Error("the sidecar closed the connection")));
    socket.on("error", (err) => this.fail(err));
  }

  sendMessage(msg) {
    this.socket.write(new Uint8Array(msg.segment.message.toArrayBuffer()));
  }

  recvMessage() {
    if (this.messages.length > 0) return Promise.resolve(this.messages.shift());
    if (this.error) return Promise.reject(); // capnp-es's Conn stops quietly on undefined
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  close() {
    this.socket.end();
    this.fail(new Error("closed"));
  }

  onData(chunk) {
    this.pending = Buffer.concat([this.pending, chunk]);
    for (;;) {
      const size = this.frameSize();
      if (size === 0 || this.pending.length < size) return;
      const frame = this.pending.subarray(0, size);
      this.pending = this.pending.subarray(size);
      // A copy: capnp-es keeps the ArrayBuffer, and Node's may be a shared pool.
      const bytes = frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.length);
      const msg = new Message(bytes, false).getRoot(RpcMessage);
      const waiter = this.waiters.shift();
      if (waiter) waiter.resolve(msg);
      else this.messages.push(msg);
    }
  }

  // Bytes of the first whole frame in `pending`; 0 while its segment table is incomplete.
  frameSize() {
    if (this.pending.length < 4) return 0;
    const segments = this.pending.readUInt32LE(0) + 1;
    const table = 4 + 4 * segments + (segments % 2 === 0 ? 4 : 0); // padded to 8 bytes
    if (this.pending.length < table) return 0;
    let words = 0;
    for (let i = 0; i < segments; i++) words += this.pending.readUInt32LE(4 + 4 * i);
    return table + 8 * words;
  }

  // Ends the receive loop: capnp-es's Conn rethrows any defined rejection (an unhandled error),
  // and stops quietly on undefined. Watch the socket's "close" to learn that leases are lost.
  fail(err) {
    if (this.error) return;
    this.error = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject();
  }
}
