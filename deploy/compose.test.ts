import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Ajv } from "ajv";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repoRoot } from "./bundle.ts";
import { components } from "./components.ts";

// deploy/compose.yaml (and the test servers' scripts/services.compose.yaml) against the Compose specification's
// JSON schema, and Latchkey's containers against the code's components and docs/configuration.md. No Docker
// engine runs where the tests run, so `docker compose config` cannot be the check.

// The schema as dclint ships it (schemas/compose.schema.json, the Compose specification's compose-spec.json);
// its package exports leave the file out, so it is read from the package's folder.
const dclint = dirname(createRequire(import.meta.url).resolve("dclint/package.json"));
// It names draft-07 by an https URL that ajv does not know under that spelling; draft-07 is ajv's default
// dialect, so the schema is compiled without it. It also carries annotations ajv does not know ("deprecated"):
// not strict.
const { $schema: _dialect, ...schema } = JSON.parse(
  readFileSync(join(dclint, "schemas", "compose.schema.json"), "utf8"),
);
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
  volumes?: string[];
  restart?: string;
  entrypoint?: string[];
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const read = (path: string) => readFileSync(join(repoRoot, path), "utf8");
// Compose resolves YAML merge keys (<<: *anchor), as the yaml library does with `merge`.
const load = (path: string) => parse(read(path), { merge: true }) as ComposeFile;
const compose = load("deploy/compose.yaml");
const latchkeyImage = `\${LATCHKEY_IMAGE:-latchkey:local}`;
const latchkey = Object.entries(compose.services).filter(
  ([name, s]) => s.image === latchkeyImage && name !== "secrets",
);

/** The rows of `### <component>` in docs/configuration.md: variable -> its default cell. */
function documented(component: string): Map<string, string> {
  const doc = read("docs/configuration.md");
  const section = doc.split(/^### /m).find((s) => s.startsWith(`${component}\n`));
  if (section === undefined) throw new Error(`docs/configuration.md has no section "### ${component}"`);
  return new Map(
    [...section.matchAll(/^\|\s*`([A-Z0-9_]+)`\s*\|\s*([^|]+?)\s*\|/gm)].map((m) => [m[1]!, m[2]!]),
  );
}

/** The secrets the one-shot service writes (its `pick NAME` lines). */
const secretNames = new Set(
  [...(compose.services["secrets"]?.entrypoint ?? []).join("\n").matchAll(/^\s*pick ([A-Z_]+) /gm)].map(
    (m) => m[1]!,
  ),
);

describe("the Compose files against the Compose specification", () => {
  it.each(["deploy/compose.yaml", "scripts/services.compose.yaml"])("%s is valid", (path) => {
    const ok = validate(load(path));
    expect(validate.errors ?? [], path).toEqual([]);
    expect(ok).toBe(true);
  });

  it("the schema refuses what Compose refuses: a misspelt key and a wrong condition", () => {
    const broken = structuredClone(compose) as any;
    broken.services.keys.helthcheck = broken.services.keys.healthcheck;
    expect(validate(broken)).toBe(false);
    const wrong = structuredClone(compose) as any;
    wrong.services.keys.depends_on.postgres.condition = "service_ready";
    expect(validate(wrong)).toBe(false);
  });
});

describe("deploy/compose.yaml", () => {
  it("runs every component once, from the image deploy/Dockerfile builds, as the image starts it", () => {
    expect(Object.fromEntries(latchkey.map(([name, s]) => [name, s.command]))).toEqual(
      Object.fromEntries(components.map((c) => [c.name, [`dist/${c.name}.mjs`]])),
    );
    for (const [, s] of latchkey)
      expect(s.entrypoint?.at(-2)).toContain('exec node --enable-source-maps "$$@"');
  });

  it.each(latchkey)(
    "%s sets only variables docs/configuration.md lists for it, and every required one",
    (name, s) => {
      const rows = documented(name);
      const env = s.environment ?? {};
      const undocumented = Object.keys(env).filter((v) => !rows.has(v));
      expect(undocumented, `variables of ${name} missing from docs/configuration.md`).toEqual([]);
      const required = [...rows].filter(([, cell]) => cell === "required").map(([v]) => v);
      expect(required.filter((v) => !(v in env))).toEqual([]);
      const component = components.find((c) => c.name === name)!;
      expect(env["PORT"]).toBe(String(component.port));
    },
  );

  it.each(latchkey)("%s takes its secrets only from the secrets file", (_name, s) => {
    for (const [variable, value] of Object.entries(s.environment ?? {})) {
      // $${NAME} in the file is ${NAME} in the container, which the entrypoint expands from the secrets file.
      for (const [, ref] of value.matchAll(/\$\$\{([A-Z_]+)\}/g)) {
        expect(secretNames, `${variable} refers to ${ref}`).toContain(ref);
      }
      if (/SECRET|_KEY$|PASSWORD/.test(variable)) expect(value).toBe(`$\${${variable}}`);
      if (/_URL$/.test(variable) && /:[^/@]*@/.test(value)) expect(value).toMatch(/:\$\$\{[A-Z_]+\}@/);
    }
  });

  it("points each component's URLs at the component's service and port", () => {
    const byUrl = new Map(
      components.map((c) => [`${c.name.toUpperCase()}_URL`, `http://${c.name}:${c.port}`]),
    );
    for (const [name, s] of latchkey) {
      for (const [variable, value] of Object.entries(s.environment ?? {})) {
        if (byUrl.has(variable)) expect(value, `${name} ${variable}`).toBe(byUrl.get(variable));
      }
    }
  });

  it("health-checks every long-running service, and starts each after what it needs is healthy", () => {
    for (const [name, s] of Object.entries(compose.services)) {
      if (name === "secrets") {
        expect(s.restart).toBe("no");
        continue;
      }
      expect(s.healthcheck?.test.length, `${name} has a healthcheck`).toBeGreaterThan(1);
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        expect(condition, `${name} -> ${dep}`).toBe(
          dep === "secrets" ? "service_completed_successfully" : "service_healthy",
        );
        if (dep !== "secrets") expect(compose.services[dep]?.healthcheck, dep).toBeDefined();
      }
    }
    // A component's healthcheck asks its own port's /readyz.
    for (const [name, s] of latchkey) {
      const port = components.find((c) => c.name === name)!.port;
      expect(s.healthcheck!.test.join(" ")).toContain(`http://127.0.0.1:${port}/readyz`);
    }
    expect(Object.keys(compose.services["gateway"]!.depends_on ?? {})).toEqual(
      expect.arrayContaining(components.filter((c) => c.name !== "gateway").map((c) => c.name)),
    );
  });

  it("keeps state in named volumes only, and publishes only the gateway's port", () => {
    const named = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, s] of Object.entries(compose.services)) {
      for (const volume of s.volumes ?? []) {
        expect(named, `${name}: ${volume}`).toContain(volume.split(":")[0]);
      }
      if (name !== "gateway") expect(s.ports, name).toBeUndefined();
    }
    expect(compose.services["gateway"]!.ports).toEqual([
      `\${LATCHKEY_LISTEN:-127.0.0.1}:\${LATCHKEY_PORT:-7070}:7070`,
    ]);
  });

  it("deploy/.env.example names every variable the file reads from the environment, and no other", () => {
    const text = read("deploy/compose.yaml");
    // ${NAME...} with a single $ is Compose's interpolation; $${NAME} is a literal for the container.
    const interpolated = new Set([...text.matchAll(/(?<!\$)\$\{([A-Z_]+)/g)].map((m) => m[1]!));
    const example = new Set([...read("deploy/.env.example").matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!));
    expect([...example].sort()).toEqual([...interpolated].sort());
    expect([...secretNames].sort()).toEqual(
      [...interpolated].filter((v) => /SECRET|_KEY$|PASSWORD/.test(v)).sort(),
    );
  });
});

/** Compose's interpolation with nothing set: ${NAME:-default} is its default, $$ a literal $. */
const interpolate = (value: string) =>
  value.replace(/\$\$|\$\{[A-Z_]+(?::?-([^}]*))?\}/g, (match, fallback: string | undefined) =>
    match === "$$" ? "$" : (fallback ?? ""),
  );

// The two scripts the file runs, as the container runs them: Compose turns $$ into $, and /bin/sh runs the result
// (dash, as in the node image), with the secrets folder moved to a temporary one.
describe("deploy/compose.yaml's scripts", () => {
  const dir = mkdtempSync(join(tmpdir(), "latchkey-compose-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // chown to the image's uid 1000 needs root, which a developer's test run need not have.
  const bin = join(dir, "bin");
  mkdirSync(bin);
  mkdirSync(join(dir, "run"));
  writeFileSync(join(bin, "chown"), "#!/bin/sh\nexit 0\n");
  chmodSync(join(bin, "chown"), 0o755);
  const script = (service: string) =>
    interpolate(compose.services[service]!.entrypoint!.at(-2)!).replaceAll("/run/latchkey", join(dir, "run"));
  const secretsFile = join(dir, "run", "secrets.env");
  const unset = Object.fromEntries(
    Object.keys(compose.services["secrets"]!.environment!).map((k) => [k, ""]),
  );
  const secrets = (env: Record<string, string> = {}, ...args: string[]) =>
    execFileSync("/bin/sh", ["-c", script("secrets"), "secrets", ...args], {
      // Compose sets each of its environment's variables, empty where deploy/.env leaves it out.
      env: { PATH: `${bin}:${process.env["PATH"]}`, ...unset, ...env },
      encoding: "utf8",
    });
  const values = () =>
    Object.fromEntries(
      readFileSync(secretsFile, "utf8")
        .trim()
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );

  it("secrets generates each secret once, keeps it at the next run, and lets deploy/.env's value win", () => {
    secrets();
    const first = values();
    expect(Object.keys(first).sort()).toEqual([...secretNames].sort());
    expect(first["LATCHKEY_INTERNAL_SECRET"]).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.from(first["LATCHKEY_ENCRYPTION_KEY"]!, "base64")).toHaveLength(32);
    expect(first["LATCHKEY_ROOT_KEY"]).toMatch(/^lk_root_[0-9a-f]{48}$/);
    for (const p of ["POSTGRES_PASSWORD", "CLICKHOUSE_PASSWORD", "CLICKHOUSE_QUERY_PASSWORD"]) {
      expect(first[p]).toMatch(/^[0-9a-f]{48}$/);
    }
    expect(new Set(Object.values(first)).size).toBe(6);
    expect(statSync(secretsFile).mode & 0o777).toBe(0o400);

    secrets();
    expect(values()).toEqual(first);
    secrets({ LATCHKEY_ROOT_KEY: "lk_root_from_the_env_file" });
    expect(values()).toEqual({ ...first, LATCHKEY_ROOT_KEY: "lk_root_from_the_env_file" });
    expect(secrets({}, "root-key").trim()).toBe("lk_root_from_the_env_file");
  });

  it("a component gets its environment with the secrets filled in, and none of the other secrets", () => {
    secrets();
    const secret = values();
    const env = compose.services["keys"]!.environment!;
    const out = execFileSync(
      "/bin/sh",
      ["-c", script("keys"), "latchkey", "-e", "console.log(JSON.stringify(process.env))"],
      // As the container sees it, with no deploy/.env: Compose's interpolation done.
      {
        env: {
          PATH: process.env["PATH"]!,
          ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(v)])),
        },
        encoding: "utf8",
      },
    );
    const seen = JSON.parse(out) as Record<string, string>;
    expect(seen["DATABASE_URL"]).toBe(
      `postgres://latchkey:${secret["POSTGRES_PASSWORD"]}@postgres:5432/latchkey`,
    );
    expect(seen["LATCHKEY_INTERNAL_SECRET"]).toBe(secret["LATCHKEY_INTERNAL_SECRET"]);
    expect(seen["LATCHKEY_ROOT_KEY"]).toBe(secret["LATCHKEY_ROOT_KEY"]);
    expect(seen["LATCHKEY_ENCRYPTION_KEY"]).toBe(secret["LATCHKEY_ENCRYPTION_KEY"]);
    expect(seen["RATELIMIT_URL"]).toBe("http://ratelimit:7072");
    expect(seen["LOG_LEVEL"]).toBe("info");
    for (const other of ["POSTGRES_PASSWORD", "CLICKHOUSE_PASSWORD", "CLICKHOUSE_QUERY_PASSWORD"]) {
      expect(seen[other], other).toBeUndefined();
    }
    expect(Object.values(seen).filter((v) => v.includes("${"))).toEqual([]);
  });
});
