import type { Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type InternalAuth, signedTransport } from "./internal-auth.ts";
import { unaryTransport, type WireCodecs } from "./unary.ts";

export interface InternalTransportOptions {
  /**
   * Signs every call, as the services require (internal-auth.ts): InternalAuth.fromEnv() in a
   * process's main.ts. "none" only for tests of a service served without it.
   */
  auth: InternalAuth | "none";
  /**
   * The deadline of a call that sets none (RPC_TIMEOUT_MS in main.ts): past it the call fails with
   * DeadlineExceeded and its connection is closed. Without it a call waits as long as the server.
   */
  timeoutMs?: number;
  /** Hand-written codecs of hot methods (see WireCodec). */
  codecs?: WireCodecs;
}

/**
 * The transport between Latchkey's own processes: Connect protocol, binary
 * protobuf, HTTP/1.1 keep-alive and no compression (measured fastest for
 * batched calls on loopback; see docs/architecture.md). Unary calls go through
 * unaryTransport, without connect's per-call machinery; each is signed and
 * given its deadline here.
 *
 * `baseUrls` may list several instances, comma-separated: calls go to them in
 * turn (a Kubernetes Service does the same with one URL).
 */
export function internalTransport(baseUrls: string, options: InternalTransportOptions): Transport {
  const codecs = options.codecs ?? {};
  const transports = baseUrls
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean)
    .map((baseUrl) =>
      unaryTransport(
        baseUrl,
        createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true, acceptCompression: [] }),
        codecs,
      ),
    );
  if (transports.length === 0) throw new Error("internalTransport needs at least one URL");
  let wire: Transport;
  if (transports.length === 1) wire = transports[0]!;
  else {
    let next = 0;
    const pick = () => transports[next++ % transports.length]!;
    wire = {
      unary: (...args) => pick().unary(...args),
      stream: (...args) => pick().stream(...args),
    };
  }
  return signedTransport(wire, options.auth, options.timeoutMs);
}
