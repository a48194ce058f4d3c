// The layer rules, checked by `npm test` (scripts/test.sh) and by `npm run check:layers`.
// Why each rule exists: docs/architecture.md ("Layers"). A violation fails the run; there is no baseline.

/** The parts of the repository, by path from its root. */
const SERVICE = "^services/([^/]+)/";
const OWN_SERVICE = "^services/$1/";
const PACKAGES = "^packages/";
const PROTO_GEN = "^proto/gen/";
/**
 * The contract package beside proto/gen: the hand-written codecs of the messages that cross a process boundary
 * and the one protobuf reader and writer they are written on. Both ends of a call import it.
 */
const CONTRACT = "^proto/codecs/";
/** A test file, wherever it is (tests stay beside the code they test). */
const TEST_FILE = "\\.test\\.ts$";
/** Test support: what tests build and share lives in a testing/ folder of its package (CONTRIBUTING.md). */
const TESTING = "(^|/)testing/";
/** A service's tests and its testing/ folder: they may compose services as the all-in-one does. */
const SERVICE_TEST_CODE = "^services/([^/]+)/(testing/.+|.+\\.test)\\.ts$";
/** Production code: what a process runs, the source folders of every package, app and service and the console's. */
const PRODUCTION = "^((packages|services|apps)/[^/]+|gateway)/src/|^console/(src|server)/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      comment:
        "A module may not reach itself through its imports: a cycle makes the load order decide which side sees the other half-initialised.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "service-imports-another-service",
      comment:
        "A service reaches another one only through its generated client (proto/gen), the contract's codecs (proto/codecs) and the shared packages, so each can run as a process of its own.",
      severity: "error",
      from: { path: SERVICE, pathNot: SERVICE_TEST_CODE },
      to: { path: "^services/", pathNot: OWN_SERVICE },
    },
    {
      name: "service-test-imports-another-service-inside",
      comment:
        "A service's tests and its testing/ folder may wire another service in process, as the all-in-one does, but only through its package's entry (services/<name>/src/index.ts), never its internals or its testing/ folder.",
      severity: "error",
      from: { path: SERVICE_TEST_CODE },
      to: { path: "^services/", pathNot: [OWN_SERVICE, "^services/[^/]+/src/index\\.ts$"] },
    },
    {
      name: "production-imports-test-support",
      comment:
        "Production code never imports from a testing/ folder, nor a test: test support may wire other services in process and starts servers, and whatever production code imports goes into the image's bundles.",
      severity: "error",
      from: { path: PRODUCTION, pathNot: TEST_FILE },
      to: { path: [TESTING, TEST_FILE] },
    },
    {
      name: "service-imports-a-composition",
      comment:
        "A service depends on proto/gen, proto/codecs and packages/* only: never on the gateway, an app, the console, the end-to-end tests, bench or deploy.",
      severity: "error",
      from: { path: SERVICE },
      to: { path: "^(gateway|apps|console|test|bench|deploy)/" },
    },
    {
      name: "contract-imports-only-gen",
      comment:
        "The contract package (proto/codecs) is what both ends of a call agree on, so it imports proto/gen and itself only: never packages/*, a service or anything above, which would come along with it to the other end.",
      severity: "error",
      from: { path: CONTRACT },
      to: { path: "^(services|gateway|apps|console|packages|test|bench|deploy)/" },
    },
    {
      name: "package-imports-upward",
      comment:
        "packages/* are libraries under everything else: they may import proto/gen, the contract package (proto/codecs) and each other, never a service, the gateway or an app.",
      severity: "error",
      from: { path: PACKAGES },
      to: { path: "^(services|gateway|apps|console|test|bench|deploy)/" },
    },
    {
      name: "gateway-imports-service-source",
      comment:
        "The gateway calls the services through their generated clients (proto/gen) and the contract's codecs (proto/codecs), which is what lets it run in front of separate processes.",
      severity: "error",
      from: { path: "^gateway/" },
      to: { path: "^(services|apps|test|bench|deploy)/" },
    },
    {
      name: "console-imports-the-server",
      comment:
        "The console (its pages and the server code that builds and serves them) is a client of the public API: it imports packages/* at most, never a service, the gateway or an app. console/test holds end-to-end tests, which compose everything as test/ does.",
      severity: "error",
      from: { path: "^console/", pathNot: "^console/test/" },
      to: { path: "^(services|gateway|apps|test|bench|deploy)/" },
    },
    {
      name: "proto-imports-ours",
      comment: "proto/gen is generated from the .proto files alone and depends on nothing of ours.",
      severity: "error",
      from: { path: PROTO_GEN },
      to: { path: "^(services|gateway|apps|console|packages|test|bench|deploy|proto/codecs)/" },
    },
    {
      name: "unresolvable",
      comment:
        "An import the checker cannot resolve would be invisible to the rules above: every import must resolve.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist)/" },
    // Type-only imports count: importing another service's types is depending on its source.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"],
    },
  },
};
