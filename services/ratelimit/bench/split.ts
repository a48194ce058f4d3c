/**
 * What the in-process benches share: runs decode → handler → encode of one
 * request for `seconds` after a second of warm-up, and answers the CPU time of
 * this process per item (the machines are shared: steadier than wall time),
 * split in proportion to the wall time of the three steps.
 */
export async function splitCpuPerItem<Req, Res>(options: {
  bytes: Uint8Array;
  items: number;
  seconds: number;
  decode: (bytes: Uint8Array) => Req;
  handle: (req: Req) => Promise<Res>;
  encode: (res: Res) => Uint8Array;
  /** Awaited after each request, e.g. to let queued events be handed over as between requests in production. */
  between?: () => Promise<void>;
}): Promise<{ perItem: number; decode: number; handle: number; encode: number }> {
  const run = async (seconds: number) => {
    const wall = { decode: 0, handle: 0, encode: 0, requests: 0 };
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 50; i++) {
        const t0 = performance.now();
        const req = options.decode(options.bytes);
        const t1 = performance.now();
        const res = await options.handle(req);
        const t2 = performance.now();
        options.encode(res);
        const t3 = performance.now();
        wall.decode += t1 - t0;
        wall.handle += t2 - t1;
        wall.encode += t3 - t2;
        if (options.between) await options.between();
      }
      wall.requests += 50;
    }
    return wall;
  };
  await run(1);
  const cpu = process.cpuUsage();
  const wall = await run(options.seconds);
  const used = process.cpuUsage(cpu);
  const perItem = (used.user + used.system) / (wall.requests * options.items);
  const total = wall.decode + wall.handle + wall.encode;
  const share = (ms: number) => (ms / total) * perItem;
  return { perItem, decode: share(wall.decode), handle: share(wall.handle), encode: share(wall.encode) };
}

export const formatSplit = (
  r: { perItem: number; decode: number; handle: number; encode: number },
  per: string,
) =>
  `${r.perItem.toFixed(2)} µs CPU per ${per} (decode ${r.decode.toFixed(2).padStart(6)}, handler ${r.handle
    .toFixed(2)
    .padStart(6)}, encode ${r.encode.toFixed(2).padStart(6)})`;
