import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ReportLeakRequest, ReportLeakResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";
import { failsChecksum } from "../leaks/key-format.ts";
import { keyStringReported } from "../leaks/leak-reports.ts";

/** The longest key string a report may carry (a key of 255 random bytes and a 16-character prefix fits). */
export const MAX_REPORTED_KEY_LENGTH = 512;
/** The longest `url` a report may carry. */
export const MAX_REPORTED_URL_LENGTH = 2_048;

/**
 * keys.reportLeak: anyone who found a key string may report it, with no root key. The answer is the
 * same, and takes the same time, whether the string is a key or not: the work is queued and done
 * after it (leaks/leak-queue.ts). A string that fails the checksummed format's check cannot be a
 * key and is not even queued, which no answer shows either.
 */
export function reportLeak(deps: KeysDeps) {
  return async (req: ReportLeakRequest): Promise<MessageInitShape<typeof ReportLeakResponseSchema>> => {
    if (req.key === "" || req.key.length > MAX_REPORTED_KEY_LENGTH) {
      throw invalidInput("/key", `key must be 1 to ${MAX_REPORTED_KEY_LENGTH} characters`);
    }
    const url = validUrl(req.url);
    if (failsChecksum(req.key)) return {};
    const key = req.key;
    if (!deps.leakReports.add(() => keyStringReported(deps, key, "report", url))) {
      throw domainError(ErrorReason.UNAVAILABLE, "Too many leak reports are waiting; retry shortly.");
    }
    return {};
  };
}

/** An http(s) URL, or "" for none. */
function validUrl(url: string): string {
  if (url === "") return "";
  let parsed: URL | undefined;
  try {
    parsed = url.length <= MAX_REPORTED_URL_LENGTH ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw invalidInput(
      "/url",
      `url must be an http or https URL of at most ${MAX_REPORTED_URL_LENGTH} characters`,
    );
  }
  return url;
}
