import type { Transport } from "@connectrpc/connect";

/**
 * Spreads calls over several instances of one service, in turn. KEYS_URL may
 * name several keys-service instances ("http://a:7071,http://b:7071"); each
 * call, and so each verification batch, goes to the next one.
 */
export function roundRobin(transports: readonly Transport[]): Transport {
  if (transports.length === 0) throw new Error("roundRobin needs at least one transport");
  if (transports.length === 1) return transports[0]!;
  let next = 0;
  const pick = () => {
    const t = transports[next]!;
    next = (next + 1) % transports.length;
    return t;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) =>
      pick().unary(method, signal, timeoutMs, header, input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) =>
      pick().stream(method, signal, timeoutMs, header, input, contextValues),
  };
}

/** "http://a:7071, http://b:7071" -> ["http://a:7071", "http://b:7071"]. */
export const urlsOf = (list: string) =>
  list
    .split(",")
    .map((u) => u.trim())
    .filter((u) => u !== "");
