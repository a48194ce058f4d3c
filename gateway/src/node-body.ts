import type { IncomingMessage } from "node:http";
import { problems } from "./problem.ts";

/**
 * A node:http request's body, whole: refused unread (413) when its Content-Length is over `max`, and
 * refused once more than `max` bytes arrive. Settles when the client goes away mid-body, so nothing
 * waits on a body that will never end. The edge server reads bodies itself (edge.ts);
 * testing/edge-differential.ts reads node:http's with this, so both are compared as the gateway reads them.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > max) {
      req.resume();
      return reject(problems.tooLarge(max));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > max) {
        done = true;
        return reject(problems.tooLarge(max));
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on("error", (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
    req.on("close", () => {
      if (done) return;
      done = true;
      reject(new Error("the client closed the connection before the body ended"));
    });
  });
}
