import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { RootKeyAuth } from "./auth.ts";

describe("RootKeyAuth", () => {
  it("holds at most maxEntries root keys, the oldest resolved leaving first", async () => {
    const asked: string[] = [];
    const keys = createClient(
      KeysService,
      createRouterTransport((router) =>
        router.service(KeysService, {
          authenticateRootKey: (req) => {
            asked.push(req.hash);
            return { caller: { workspaceId: `ws_${asked.length}`, permissions: ["*"] } };
          },
        }),
      ),
    );
    const auth = new RootKeyAuth(keys, new TestClock(), { ttlMs: 60_000, maxEntries: 2 });
    for (const key of ["lk_one", "lk_two", "lk_three"]) await auth.authenticate(`Bearer ${key}`);
    expect(asked).toHaveLength(3);
    // lk_two and lk_three are held; lk_one was dropped when lk_three came, and is asked for again.
    expect((await auth.authenticate("Bearer lk_two")).workspaceId).toBe("ws_2");
    expect((await auth.authenticate("Bearer lk_three")).workspaceId).toBe("ws_3");
    expect(asked).toHaveLength(3);
    expect((await auth.authenticate("Bearer lk_one")).workspaceId).toBe("ws_4");
    expect(asked).toHaveLength(4);
    // Now lk_two, the oldest resolved, has left.
    expect((await auth.authenticate("Bearer lk_three")).workspaceId).toBe("ws_3");
    expect((await auth.authenticate("Bearer lk_two")).workspaceId).toBe("ws_5");
    auth.close();
  });
});
