export * from "./database.ts";
export * from "./embedded-postgres.ts";
