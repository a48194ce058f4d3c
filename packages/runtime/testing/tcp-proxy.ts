import net from "node:net";

/**
 * A TCP proxy on 127.0.0.1:`port` to `target`, which the test starts and stops: a dependency that
 * is away (nothing listens on the port) and then comes, at an address that does not change.
 * `stop` also cuts the connections it carries.
 */
export function tcpProxy(port: number, target: { host: string; port: number }) {
  let server: net.Server | undefined;
  const open = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    open.add(s);
    s.on("close", () => open.delete(s));
    s.on("error", () => s.destroy());
  };
  return {
    port,
    async start() {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        track(client);
        track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const socket of open) socket.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
