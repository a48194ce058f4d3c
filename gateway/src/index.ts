export { KEYS_CHANGED_SUBJECT } from "./auth.ts";
export { createGateway, type Exchange, type Gateway, type GatewayDeps } from "./gateway.ts";
export { listen } from "./listen.ts";
export { metricsPortOf, serveMetrics } from "./metrics-server.ts";
export { EXCHANGE_BURST } from "./portal-web.ts";
export { OPERATIONS, type Operation } from "./routes/index.ts";
