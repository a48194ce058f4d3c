import type { Clock } from "@latchkey/runtime";
import { Type } from "@sinclair/typebox";
import type { RequestOrigin } from "../../client-address.ts";
import { Problem, problems } from "../../problem.ts";
import type { Services } from "../../route.ts";
import { Closed, compile, Str } from "../../schema.ts";
import { ClientRate } from "./client-rate.ts";

/**
 * Operations anyone may call, with no root key (Latchkey's additions, docs/api.md): a leaked key
 * reported by whoever found it, and GitHub's secret-scanning reports. They are not in the route
 * table, whose every operation authenticates a root key; the gateway serves them beside it.
 */
export interface OpenRequest extends RequestOrigin {
  /** A request field by its lower-case name (Github-Public-Key-Identifier and -Signature). */
  header?(name: string): string | undefined;
}

export interface OpenContext {
  requestId: string;
  services: Services;
  /** The client a request comes from, as the gateway's TRUSTED_PROXIES reads it; undefined when unknown. */
  clientOf(origin: RequestOrigin): string | undefined;
  clock: Clock;
}

/** `data` for the usual envelope, or `bare`: JSON answered as it is (GitHub expects its own shape). */
export type OpenReply = { data: unknown; bare?: undefined } | { bare: string; data?: undefined };

export interface OpenEndpoint {
  handle(body: Buffer, request: OpenRequest, ctx: OpenContext): Promise<OpenReply>;
}

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

/** The open endpoints, by path; `rate` is one gateway's budgets of reports per client. */
export function openEndpoints(rate = new ClientRate()): Map<string, OpenEndpoint> {
  return new Map<string, OpenEndpoint>([
    [
      "/v2/keys.reportLeak",
      {
        async handle(body, request, { services, requestId, clientOf, clock }) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(body.toString("utf8"));
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
          const client = clientOf(request);
          if (client !== undefined && !rate.take(client, clock.now())) throw tooMany();
          await services.keys.reportLeak({ key: input.value.key, url: input.value.url ?? "", requestId });
          return { data: {} };
        },
      },
    ],
    [
      "/v2/keys.receiveGithubLeaks",
      {
        async handle(body, request, { services, requestId }) {
          const res = await services.keys.receiveGithubLeaks({
            body,
            keyIdentifier: request.header?.("github-public-key-identifier") ?? "",
            signature: request.header?.("github-public-key-signature") ?? "",
            requestId,
          });
          return { bare: res.answerJson };
        },
      },
    ],
  ]);
}
