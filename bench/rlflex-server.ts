import http from "node:http";
import { Redis } from "ioredis";
import { RateLimiterRedis, type RateLimiterRes } from "rate-limiter-flexible";

/**
 * The peer for ratelimits.limit: what a Node user would otherwise pick,
 * rate-limiter-flexible on Redis behind a bare node:http server, answering the
 * same JSON shape as Latchkey.
 */
const redis = new Redis(process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379", { enableOfflineQueue: true });
const limiters = new Map<string, RateLimiterRedis>();
const limiterFor = (limit: number, duration: number) => {
  const id = `${limit}:${duration}`;
  let limiter = limiters.get(id);
  if (!limiter) {
    limiter = new RateLimiterRedis({
      storeClient: redis,
      points: limit,
      duration: Math.max(1, Math.round(duration / 1000)),
      keyPrefix: `bench:${id}`,
    });
    limiters.set(id, limiter);
  }
  return limiter;
};

const send = (res: http.ServerResponse, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
};

const server = http.createServer((req, res) => {
  if (req.method === "GET") {
    res.end("ok");
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const {
      namespace,
      identifier,
      limit,
      duration,
      cost = 1,
    } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    limiterFor(limit, duration)
      .consume(`${namespace}:${identifier}`, cost)
      .then(
        (r: RateLimiterRes) => ({ success: true, r }),
        (r: unknown) => ({ success: false, r: r as RateLimiterRes }),
      )
      .then(({ success, r }) =>
        send(res, {
          meta: { requestId: "req_0000000000" },
          data: {
            success,
            limit,
            remaining: r.remainingPoints ?? 0,
            reset: Date.now() + (r.msBeforeNext ?? 0),
          },
        }),
      );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env["PORT"] ?? 7081), "127.0.0.1");
