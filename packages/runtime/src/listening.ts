import net from "node:net";

/** Ports a process listens on before the server that will serve them exists (listenEarly), by port. */
const early = new Map<number, { server: net.Server; host: string; handOver(): void }>();

/**
 * Starts `server` listening on `port` (0 picks a free one) and answers the port it got, or rejects
 * with the listen error (a port in use, say) instead of leaving it to crash the process later.
 *
 * A port this process already listens on through listenEarly is handed over instead: `server`
 * takes the very socket that listens (net's listen(handle)), so no connection is refused between
 * the two and the connections accepted from then on are `server`'s own, counted and closed by it.
 */
export async function listening(server: net.Server, port: number, host?: string): Promise<number> {
  const held = port === 0 ? undefined : early.get(port);
  if (held !== undefined && held.host !== (host ?? held.host)) {
    throw new Error(`port ${port} is listened on at ${held.host}, not ${host}, by this process`);
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const done = () => {
      server.off("error", reject);
      resolve();
    };
    if (held === undefined) server.listen(port, host, done);
    else {
      early.delete(port);
      server.listen(held.server, done);
      held.handOver();
    }
  });
  return (server.address() as net.AddressInfo).port;
}

export interface EarlyPort {
  readonly port: number;
  /**
   * Stops listening and closes what `accept` was handed, unless a server took the port over
   * (then the port is that server's to close).
   */
  close(): void;
}

/**
 * Listens on `port` of `host` at once, before the process has what it serves (bootstrap.ts:
 * probes and "starting" answers while it waits for its dependencies); `accept` is handed each
 * connection until listening() is asked for the same port, and `handedOver` runs then.
 */
export async function listenEarly(
  port: number,
  host: string,
  accept: (socket: net.Socket) => void,
  handedOver: () => void,
): Promise<EarlyPort> {
  const server = net.createServer(accept);
  const got = await listening(server, port, host);
  let taken = false;
  early.set(got, {
    server,
    host,
    handOver() {
      taken = true;
      handedOver();
    },
  });
  return {
    port: got,
    close() {
      if (taken) return;
      early.delete(got);
      server.close();
    },
  };
}
