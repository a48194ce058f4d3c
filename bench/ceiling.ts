import http from "node:http";

/**
 * The ceiling: a bare node:http server that parses the JSON body and answers a
 * fixed JSON body of the given size, the least any JSON-over-HTTP service does.
 */
const size = Number(process.env["BODY_SIZE"] ?? 300);
const padding = "x".repeat(Math.max(0, size - 60));
const body = JSON.stringify({ meta: { requestId: "req_0000000000" }, data: { valid: true, padding } });

const server = http.createServer((req, res) => {
  if (req.method === "GET") {
    res.end("ok"); // the harness's health probe
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env["PORT"] ?? 7080), "127.0.0.1");
