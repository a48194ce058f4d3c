import { parseArgs } from "node:util";
import { applyDueRefills, createRootKey, createWorkspace, listRootKeys } from "@latchkey/keys";
import { createLogger, env } from "@latchkey/runtime";
import { openDatabase } from "./database.ts";
import { revokeAndAnnounce } from "./key-changes.ts";

const USAGE = `Usage: npm run latchkey -- <command>

  workspace create <name>                       a workspace and a root key holding *
  root-key create [--workspace <id or name>] --permissions <p1,p2,...>
                                                a root key (default workspace when omitted)
  root-key list                                 every root key (never the key itself)
  root-key revoke <id>                          the root key stops working, on every gateway at once
  credits refill [--at <unix ms>]               applies every credit refill due at that instant (default now)

Works against DATABASE_URL, or the embedded database under DATA_DIR (default ./.latchkey),
also while \`npm start\` holds it open. A new key is printed once, alone on the last line.
A revocation reaches every \`npm start\` on the same database through it, and, with NATS_URL,
the gateways on that NATS.`;

class UsageError extends Error {}

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      workspace: { type: "string" },
      permissions: { type: "string" },
      at: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [noun, verb, arg] = positionals;
  if (values.help || !noun) {
    say(USAGE);
    return;
  }
  const command = `${noun} ${verb ?? ""}`.trim();
  const known = ["workspace create", "root-key create", "root-key list", "root-key revoke", "credits refill"];
  if (!known.includes(command)) throw new UsageError(`Unknown command '${command}'.`);
  if ((command === "workspace create" || command === "root-key revoke") && !arg) {
    throw new UsageError(`'${command}' needs an argument.`);
  }
  if (command === "root-key create" && !values.permissions) {
    throw new UsageError(
      "root-key create needs --permissions, e.g. --permissions api.*.verify_key,api.*.read_key",
    );
  }

  const at = values.at === undefined ? Date.now() : Number(values.at);
  if (!Number.isSafeInteger(at) || at < 0)
    throw new UsageError(`--at must be a unix time in milliseconds, got '${values.at}'.`);

  const db = await openDatabase({
    reuseRunning: true,
    onLost(err) {
      console.error(err.message);
      process.exit(1);
    },
  });
  try {
    switch (command) {
      case "workspace create": {
        const ws = await createWorkspace(db.sql, arg!);
        say(`workspace ${ws.workspaceId} (${arg})`);
        say(`root key ${ws.rootKeyId} with permission *; it is shown once:`);
        say(ws.rootKey);
        break;
      }
      case "root-key create": {
        const permissions = values
          .permissions!.split(",")
          .map((p) => p.trim())
          .filter(Boolean);
        const created = await createRootKey(db.sql, {
          ...(values.workspace ? { workspace: values.workspace } : {}),
          permissions,
        });
        say(`root key ${created.rootKeyId} with ${permissions.join(", ")}; it is shown once:`);
        say(created.rootKey);
        break;
      }
      case "root-key list": {
        const keys = await listRootKeys(db.sql);
        for (const k of keys) {
          const state = k.revokedAt ? `revoked ${new Date(k.revokedAt).toISOString()}` : "active";
          say(
            `${k.id}\t${k.workspaceId} (${k.workspaceName})\t${k.start}…\t${state}\t${k.permissions.join(",")}`,
          );
        }
        if (keys.length === 0) say("no root keys");
        break;
      }
      case "credits refill": {
        const { refilled } = await applyDueRefills(db.sql, at);
        say(`refilled ${refilled} key${refilled === 1 ? "" : "s"} due at ${new Date(at).toISOString()}`);
        break;
      }
      case "root-key revoke": {
        const { natsError } = await revokeAndAnnounce(db.sql, arg!, {
          natsUrl: env.string("NATS_URL"),
          log: createLogger("latchkey-cli", "silent"),
        });
        if (natsError) {
          console.warn(
            `could not announce the revocation on NATS (${natsError}): gateways there stop accepting the key when their root-key cache entry expires (ROOT_KEY_CACHE_TTL_MS)`,
          );
        }
        say(`root key ${arg} revoked`);
        break;
      }
    }
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
  else console.error(err instanceof Error ? err.message : err);
  process.exitCode = err instanceof UsageError ? 2 : 1;
});
