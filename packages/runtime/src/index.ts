export * from "./audit.ts";
export * from "./batcher.ts";
export * from "./bus.ts";
export * from "./clock.ts";
export * from "./config.ts";
export * from "./db.ts";
export * from "./domain-events.ts";
export * from "./errors.ts";
export * from "./event-sink.ts";
export * from "./events.ts";
export * from "./identity-changes.ts";
export * from "./ids.ts";
export * from "./internal-auth.ts";
export * from "./listening.ts";
export * from "./local-transport.ts";
export * from "./logger.ts";
export * from "./metrics.ts";
export * from "./oldest-first.ts";
export * from "./permission-query.ts";
export * from "./permissions.ts";
export * from "./progress.ts";
export * from "./sealing.ts";
export * from "./serve.ts";

import "./text-encoding.ts";

export * from "./transport.ts";
export * from "./waiting.ts";
