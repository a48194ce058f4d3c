import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

async function withNamespaces(names: string[]) {
  const h = harness();
  const ids: Record<string, string> = {};
  for (const name of names) ids[name] = (await h.deps.store.createNamespace("ws_1", name)).id;
  await h.deps.store.createNamespace("ws_2", "theirs");
  return { ...h, ids };
}

describe("ratelimits.listNamespaces", () => {
  it("pages the workspace's namespaces by id with a cursor while more remain, never another workspace's", async () => {
    const { client, ids } = await withNamespaces(["a", "b", "c"]);
    const sorted = Object.values(ids).sort((x, y) => (x < y ? -1 : 1));
    const c = caller("ws_1", "ratelimit.*.read_namespace");
    const first = await client.listNamespaces({ caller: c, page: { limit: 2 } });
    expect(first.namespaces.map((n) => n.id)).toEqual(sorted.slice(0, 2));
    expect(first.page).toMatchObject({ cursor: sorted[1], hasMore: true });
    const second = await client.listNamespaces({ caller: c, page: { limit: 2, cursor: first.page!.cursor } });
    expect(second.namespaces.map((n) => n.id)).toEqual(sorted.slice(2));
    expect(second.page).toMatchObject({ cursor: "", hasMore: false });
    const all = await client.listNamespaces({ caller: c });
    expect(all.namespaces.map((n) => n.name).sort()).toEqual(["a", "b", "c"]);
  });

  it("lists the namespaces a limit created on first use", async () => {
    const h = harness();
    await h.client.limit({
      caller: caller("ws_1", ...LIMITER),
      check: { namespace: "email.outbound", identifier: "u", limit: 1n, duration: 1000n },
    });
    const res = await h.client.listNamespaces({ caller: caller("ws_1", "ratelimit.*.read_namespace") });
    expect(res.namespaces.map((n) => n.name)).toEqual(["email.outbound"]);
  });

  it("answers a root key holding read_namespace for some namespaces exactly those", async () => {
    const { client, ids } = await withNamespaces(["a", "b", "c"]);
    const c = caller(
      "ws_1",
      `ratelimit.${ids["a"]}.read_namespace`,
      `ratelimit.${ids["c"]}.read_namespace`,
      "ratelimit.rlns_missing.read_namespace",
      `ratelimit.${ids["b"]}.limit`,
    );
    const res = await client.listNamespaces({ caller: c });
    expect(res.namespaces.map((n) => n.name).sort()).toEqual(["a", "c"]);
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key that may read no namespace", async () => {
    const { client } = await withNamespaces(["a"]);
    await rejection(
      client.listNamespaces({ caller: caller("ws_1", "ratelimit.*.limit") }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("refuses a page size past 100 and a cursor it did not answer", async () => {
    const { client } = await withNamespaces(["a"]);
    const c = caller("ws_1", "ratelimit.*.read_namespace");
    await rejection(client.listNamespaces({ caller: c, page: { limit: 101 } }), ErrorReason.INVALID_INPUT);
    await rejection(client.listNamespaces({ caller: c, page: { cursor: "x" } }), ErrorReason.INVALID_INPUT);
  });
});
