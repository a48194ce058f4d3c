import { Type } from "@sinclair/typebox";
import { Problem, problems } from "../../problem.ts";
import { route } from "../../route.ts";
import { Closed, compile, Str } from "../../schema.ts";

/*
 * Operations anyone may call, with no root key (Latchkey's additions, docs/api.md, Leaked keys): a
 * leaked key reported by whoever found it, and GitHub's secret-scanning reports. Each reads its body's
 * bytes (`rawBody`: GitHub signs them) and is left out of docs/openapi.json (`openapi: false`).
 */

const reportSchema = Closed({
  key: Str(1, 512),
  url: Type.Optional(Str(1, 2048)),
});
const validReport = compile(reportSchema);

const tooMany = () =>
  new Problem(
    429,
    "Too Many Requests",
    "unkey/too_many_requests/leak_reports",
    "This client has made too many leak reports; retry in a minute.",
  );

const invalid = (detail: string, location: string, message: string) =>
  problems.invalidInput(detail, [
    { location, message, fix: 'Send a JSON object such as {"key": "sk_..."}.' },
  ]);

/** Neither documented nor held to a root key's permissions: what every route declares, here empty. */
const unlisted = {
  schema: Type.Uint8Array(),
  rootKey: { needs: [] as string[] },
  auth: "none" as const,
  rawBody: true as const,
  openapi: false as const,
};

export const leaksRoutes = {
  "keys.reportLeak": route({
    ...unlisted,
    example: Buffer.from('{"key":"sk_1234abcdef"}'),
    answer: Closed({}),
    async handle(body, { services, requestId, web }) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"));
      } catch {
        throw invalid("The request body is not JSON.", "/body", "The body must be a JSON object.");
      }
      const input = validReport(parsed);
      if (!input.ok) {
        const v = input.violations[0];
        throw invalid(
          `POST request body for '/v2/keys.reportLeak' failed to validate schema: ${v?.message ?? "invalid"}`,
          v?.location ?? "/body",
          v?.message ?? "invalid",
        );
      }
      // Budgeted before anything is asked: whether the key exists never changes what is charged.
      if (web?.takeLeakReport() === false) throw tooMany();
      await services.keys.reportLeak({ key: input.value.key, url: input.value.url ?? "", requestId });
      return { data: {} };
    },
  }),
  "keys.receiveGithubLeaks": route({
    ...unlisted,
    example: Buffer.from('[{"token":"sk_1234abcdef","type":"latchkey_api_key","url":"","source":"content"}]'),
    // GitHub's own shape, answered bare: [{token_hash, token_type, label}].
    answer: Type.Array(
      Closed({ token_hash: Type.String(), token_type: Type.String(), label: Type.String() }),
    ),
    async handle(body, { services, requestId, web }) {
      const res = await services.keys.receiveGithubLeaks({
        body,
        keyIdentifier: web?.header("github-public-key-identifier") ?? "",
        signature: web?.header("github-public-key-signature") ?? "",
        requestId,
      });
      return { bare: res.answerJson };
    },
  }),
};
