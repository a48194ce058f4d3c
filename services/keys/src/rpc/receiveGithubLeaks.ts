import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ReceiveGithubLeaksRequest,
  ReceiveGithubLeaksResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, hashKey, invalidInput } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";
import { failsChecksum } from "../leaks/key-format.ts";
import { leakReported } from "../leaks/leak-reports.ts";

/** Most tokens one GitHub report may carry (docs/limits.md). */
export const MAX_GITHUB_TOKENS = 1_000;
/** The longest token, type, url or source accepted in one. */
const MAX_FIELD = 2_048;

interface Match {
  token: string;
  type: string;
  url: string;
}

/**
 * GitHub's secret-scanning partner report (docs/security.md, Leak reports): the signature is checked
 * over the body exactly as it arrived before anything of it is read; each token is matched by its
 * SHA-256 against every workspace's keys (a token that fails the checksummed format's check is
 * answered a false positive without a lookup), acted on as its API's leakPolicy says, and answered
 * in GitHub's shape: `[{token_hash, token_type, label}]`, label "true_positive" for a key, else
 * "false_positive". Tokens are acted on one after another, so a report costs the database one
 * lookup at a time.
 */
export function receiveGithubLeaks(deps: KeysDeps) {
  return async (
    req: ReceiveGithubLeaksRequest,
  ): Promise<MessageInitShape<typeof ReceiveGithubLeaksResponseSchema>> => {
    const keys = deps.githubKeys;
    if (keys === undefined) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        "GitHub secret-scanning reports are not received here: SECRET_SCANNING_KEYS is not set.",
      );
    }
    let signed: boolean;
    try {
      signed = await keys.verifies(req.body, req.keyIdentifier, req.signature);
    } catch (err) {
      deps.log.error({ err }, "GitHub's secret-scanning keys could not be read");
      throw domainError(
        ErrorReason.UNAVAILABLE,
        "The keys that sign reports could not be read; retry shortly.",
      );
    }
    if (!signed) {
      throw domainError(
        ErrorReason.UNAUTHENTICATED,
        "The report's Github-Public-Key-Signature does not verify against Github-Public-Key-Identifier's key.",
      );
    }
    const matches = validReport(req.body);
    const answer: { token_hash: string; token_type: string; label: string }[] = [];
    for (const match of matches) {
      const found = failsChecksum(match.token)
        ? []
        : await leakReported(deps, hashKey(match.token), "github", match.url);
      answer.push({
        token_hash: createHash("sha256").update(match.token, "utf8").digest("hex"),
        token_type: match.type,
        label: found.length > 0 ? "true_positive" : "false_positive",
      });
    }
    return { answerJson: JSON.stringify(answer) };
  };
}

function validReport(body: Uint8Array): Match[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    throw invalidInput("/body", "the report must be a JSON array");
  }
  if (!Array.isArray(parsed)) throw invalidInput("/body", "the report must be a JSON array");
  if (parsed.length > MAX_GITHUB_TOKENS) {
    throw invalidInput("/body", `a report may carry at most ${MAX_GITHUB_TOKENS} tokens`);
  }
  return parsed.map((item: unknown, i): Match => {
    const m = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const text = (name: string, required: boolean): string => {
      const v = m[name];
      if (v === undefined && !required) return "";
      if (typeof v !== "string" || v.length > MAX_FIELD || (required && v === "")) {
        throw invalidInput(`/${i}/${name}`, `${name} must be a string of at most ${MAX_FIELD} characters`);
      }
      return v;
    };
    const url = text("url", false);
    return {
      token: text("token", true),
      type: text("type", false),
      url: /^https?:\/\//.test(url) ? url : "",
    };
  });
}
