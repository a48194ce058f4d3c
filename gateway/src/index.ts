export { KEYS_CHANGED_SUBJECT } from "./auth.ts";
export { createGateway, type Gateway, type GatewayDeps, listen } from "./gateway.ts";
export { OPERATIONS, type Operation } from "./routes/index.ts";
