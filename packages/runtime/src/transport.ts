import type { Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { unaryTransport, type WireCodecs } from "./unary.ts";

/**
 * The transport between Latchkey's own processes: Connect protocol, binary
 * protobuf, HTTP/1.1 keep-alive and no compression (measured fastest for
 * batched calls on loopback; see PERFORMANCE.md). Unary calls go through
 * unaryTransport, without connect's per-call machinery.
 *
 * `codecs` are hand-written codecs of hot methods (see WireCodec).
 *
 * `baseUrls` may list several instances, comma-separated: calls go to them in
 * turn (a Kubernetes Service does the same with one URL).
 */
export function internalTransport(baseUrls: string, codecs: WireCodecs = {}): Transport {
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
  if (transports.length === 1) return transports[0]!;
  let next = 0;
  const pick = () => transports[next++ % transports.length]!;
  return {
    unary: (...args) => pick().unary(...args),
    stream: (...args) => pick().stream(...args),
  };
}
