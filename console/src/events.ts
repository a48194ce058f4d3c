// The event types a webhook can subscribe to, as packages/runtime/src/domain-events.ts lists them
// (console/test/console.e2e.test.ts checks the two lists agree; the browser bundle does not import the runtime).
export const EVENT_TYPES = [
  { type: "key.created", about: "a key was created (or imported)" },
  { type: "key.updated", about: "a key's fields, credits, permissions or roles changed" },
  { type: "key.deleted", about: "a key was deleted" },
  { type: "key.rerolled", about: "a key was rerolled" },
  { type: "key.leaked", about: "a leak report named a key: revoked or flagged, as its API says" },
  { type: "key.expiring", about: "a key expires within its API's notice period (7 days unless set)" },
  { type: "credits.low", about: "a key's credits fell low" },
  {
    type: "credits.exhausted",
    about: "a key spent its last credit, or was first refused for want of credits",
  },
  { type: "ratelimit.exceeded", about: "a rate limit denied a request" },
  { type: "identity.created", about: "an identity was created" },
  { type: "identity.deleted", about: "an identity was deleted" },
] as const;
