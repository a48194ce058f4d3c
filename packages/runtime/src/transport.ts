import type { Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

/**
 * The transport between Latchkey's own processes: Connect protocol, binary
 * protobuf, HTTP/1.1 keep-alive and no compression (measured fastest for
 * batched calls on loopback; see PERFORMANCE.md).
 */
export function internalTransport(baseUrl: string): Transport {
  return createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: true,
    acceptCompression: [],
    sendCompression: undefined,
  });
}
