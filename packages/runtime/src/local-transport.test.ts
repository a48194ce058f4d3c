import { create, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { AuthenticateRootKeyResponseSchema, KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { domainError, ErrorReason, errorDetailOf } from "./errors.ts";
import { localTransport } from "./local-transport.ts";

const seen: unknown[] = [];
const keys = createClient(
  KeysService,
  localTransport((router) =>
    router.service(KeysService, {
      authenticateRootKey(req) {
        seen.push(req);
        if (req.hash !== "good") throw domainError(ErrorReason.UNAUTHENTICATED, "unknown root key");
        // An init shape, as the services answer: the transport makes it a message.
        return { caller: { workspaceId: "ws_1", permissions: ["api.*.read_api"] } };
      },
      getApi() {
        throw new Error("the database is down");
      },
    }),
  ),
);

describe("localTransport", () => {
  it("hands the request to the implementation as a message and answers a message with defaults filled in", async () => {
    const res = await keys.authenticateRootKey({ hash: "good" });
    expect(isMessage(res, AuthenticateRootKeyResponseSchema)).toBe(true);
    expect(res.caller).toEqual(
      create(CallerSchema, { workspaceId: "ws_1", permissions: ["api.*.read_api"] }),
    );
    // Defaults a remote call would decode are there too.
    expect(res.caller?.rootKeyId).toBe("");
    expect(isMessage(seen.at(-1), KeysService.method.authenticateRootKey.input)).toBe(true);
  });

  it("raises a domain error as the ConnectError a remote call would, with its detail", async () => {
    const err = await keys.authenticateRootKey({ hash: "bad" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    expect((err as ConnectError).rawMessage).toBe("unknown root key");
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.UNAUTHENTICATED);
  });

  it("raises any other failure as a ConnectError of code Internal, as a served call does", async () => {
    const err = await keys.getApi({ apiId: "api_1" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Internal);
  });

  it("answers Unimplemented for a method the routes do not implement", async () => {
    const err = await keys.createApi({ name: "x" }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.Unimplemented);
  });
});

describe("localTransport's headers", () => {
  it("hands the caller's headers to the handler and the handler's header and trailer back", async () => {
    const client = createClient(
      KeysService,
      localTransport((router) =>
        router.service(KeysService, {
          getApi(req, ctx) {
            ctx.responseHeader.set("x-echo", ctx.requestHeader.get("x-asked") ?? "none");
            ctx.responseTrailer.set("x-trailer", req.apiId);
            return { api: { id: req.apiId } };
          },
        }),
      ),
    );
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const res = await client.getApi(
      { apiId: "api_1" },
      { headers: { "x-asked": "yes" }, onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) },
    );
    expect(res.api?.id).toBe("api_1");
    expect(header?.get("x-echo")).toBe("yes");
    expect(trailer?.get("x-trailer")).toBe("api_1");
  });
});
