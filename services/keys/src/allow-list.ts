// The identity service checks identities' lists with the same rules, so they live in the runtime.
export * from "@latchkey/runtime/allow-list";
