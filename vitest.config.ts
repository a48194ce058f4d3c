import { defineConfig } from "vitest/config";

// Three projects, from fastest to most complete:
//   unit         in memory, no servers: *.test.ts, and test/in-memory: the gateway over the real services
//   integration  real PostgreSQL / NATS / ClickHouse / Redis, which scripts/services.sh starts: *.int.test.ts
//   e2e          the gateway and services as separate processes, over HTTP: test/**/*.e2e.test.ts
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "{packages,services,gateway,apps}/**/src/**/*.test.ts",
            "deploy/**/*.test.ts",
            "test/in-memory/**/*.test.ts",
            "console/src/**/*.test.ts",
          ],
          exclude: ["**/*.int.test.ts", "**/node_modules/**"],
          // Test files share their workers' module cache: importing the generated protobuf code, connect and
          // the services once per worker instead of once per file makes the project several times faster
          // (importing was three quarters of its time). A unit test builds what it uses, so nothing leaks.
          isolate: false,
        },
      },
      {
        test: {
          name: "integration",
          include: [
            "{packages,services,gateway,apps}/**/src/**/*.int.test.ts",
            "deploy/**/*.int.test.ts",
            "console/server/**/*.int.test.ts",
          ],
          exclude: ["**/node_modules/**"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/**/*.e2e.test.ts", "console/test/**/*.e2e.test.ts"],
          exclude: ["**/node_modules/**"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
