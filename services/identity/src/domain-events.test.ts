import { createClient, createRouterTransport } from "@connectrpc/connect";
import type { DomainEvent } from "@latchkey/proto/common/v1/common_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { createLogger, DOMAIN_EVENT_SUBJECT } from "@latchkey/runtime";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { createMemoryIdentityDeps } from "./deps.ts";
import { identityRoutes } from "./routes.ts";

describe("identity's DomainEvents and audit records, in memory", () => {
  const events = keepingEventSink();
  const deps = createMemoryIdentityDeps({ events, log: createLogger("identity", "silent") });
  const client = createClient(IdentityService, createRouterTransport(identityRoutes(deps)));
  const caller = { workspaceId: "ws_1", rootKeyId: "rk_1", permissions: ["*"], requestId: "req_1" };
  const published = () =>
    events.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
      .map((e) => {
        const m = e.message as DomainEvent;
        return [m.type, JSON.parse(m.dataJson)];
      });

  it("publishes identity.created and identity.deleted once each change is made, and nothing for a refusal", async () => {
    const { identityId } = await client.createIdentity({ caller, externalId: "user_1" });
    await client.createIdentity({ caller, externalId: "user_1" }).catch(() => {});
    const ensured = await client.ensureIdentity({ caller, externalId: "user_2" });
    await client.ensureIdentity({ caller, externalId: "user_2" });
    await client.deleteIdentity({ caller, identity: "user_1" });
    await client.deleteIdentity({ caller, identity: "user_1" }).catch(() => {});
    expect(published()).toEqual([
      ["identity.created", { identityId, externalId: "user_1" }],
      ["identity.created", { identityId: ensured.identity?.id, externalId: "user_2" }],
      ["identity.deleted", { identityId, externalId: "user_1" }],
    ]);
    // EnsureIdentity serves a keys operation, whose own record names the identity: it writes none.
    expect(deps.store.audit.records.map((r) => [r.operation, r.outcome, r.errorCode, r.requestId])).toEqual([
      ["identities.createIdentity", "success", null, "req_1"],
      ["identities.createIdentity", "failure", "IDENTITY_ALREADY_EXISTS", "req_1"],
      ["identities.deleteIdentity", "success", null, "req_1"],
      ["identities.deleteIdentity", "failure", "IDENTITY_NOT_FOUND", "req_1"],
    ]);
  });

  it("keeps an external id (an e-mail) out of a refusal's record, and names an identity's id", async () => {
    const from = deps.store.audit.records.length;
    const email = "ada.lovelace@example.com";
    const missing = "id_2cGKbMxRjGzhCxo1";
    await client.deleteIdentity({ caller, identity: email }).catch(() => {});
    await client.deleteIdentity({ caller, identity: missing }).catch(() => {});
    const records = deps.store.audit.records.slice(from);
    expect(records.map((r) => [r.operation, r.errorCode, r.resources])).toEqual([
      ["identities.deleteIdentity", "IDENTITY_NOT_FOUND", [{ type: "identity", id: "" }]],
      ["identities.deleteIdentity", "IDENTITY_NOT_FOUND", [{ type: "identity", id: missing }]],
    ]);
    expect(JSON.stringify(records)).not.toContain("lovelace");
  });
});
