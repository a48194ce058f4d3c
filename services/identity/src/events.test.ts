import type { IdentityChanged } from "@latchkey/proto/identity/v1/events_pb";
import { IDENTITY_CHANGED, MemoryBus, onIdentityChanged } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { identityChanged } from "./events.ts";

describe("identity events", () => {
  it("carries an IdentityChanged on events.identity.changed, empty strings for what does not apply", () => {
    const bus = new MemoryBus();
    const seen: IdentityChanged[] = [];
    onIdentityChanged(bus, (e) => seen.push(e));
    identityChanged({ bus }, { workspaceId: "ws_1", roleId: "role_1", roleName: "admin" });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      workspaceId: "ws_1",
      roleId: "role_1",
      roleName: "admin",
      identityId: "",
      externalId: "",
      permissionId: "",
      permissionSlug: "",
      deleted: false,
    });
  });

  it("says when what it names was deleted", () => {
    const bus = new MemoryBus();
    const seen: IdentityChanged[] = [];
    onIdentityChanged(bus, (e) => seen.push(e));
    identityChanged(
      { bus },
      { workspaceId: "ws_1", permissionId: "perm_1", permissionSlug: "a", deleted: true },
    );
    expect(seen[0]).toMatchObject({ permissionId: "perm_1", permissionSlug: "a", deleted: true });
  });

  it("hands an unreadable message on as an empty change, so consumers drop everything", () => {
    const bus = new MemoryBus();
    const seen: IdentityChanged[] = [];
    onIdentityChanged(bus, (e) => seen.push(e));
    bus.publish(IDENTITY_CHANGED, new Uint8Array([0xff, 0xff, 0xff]));
    expect(seen).toHaveLength(1);
    expect(seen[0]?.workspaceId).toBe("");
  });

  it("stops delivering after unsubscribing", () => {
    const bus = new MemoryBus();
    const seen: IdentityChanged[] = [];
    const stop = onIdentityChanged(bus, (e) => seen.push(e));
    stop();
    identityChanged({ bus }, { workspaceId: "ws_1" });
    expect(seen).toEqual([]);
  });
});
