import type net from "node:net";

/**
 * Starts `server` listening on `port` (0 picks a free one) and answers the port it got, or rejects
 * with the listen error (a port in use, say) instead of leaving it to crash the process later.
 */
export async function listening(server: net.Server, port: number, host?: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as net.AddressInfo).port;
}
