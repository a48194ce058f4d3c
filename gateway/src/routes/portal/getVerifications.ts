import type { VerificationBucket } from "@latchkey/proto/analytics/v1/analytics_pb";
import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Int, Str } from "../../schema.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

const Count = () => Type.Integer({ minimum: 0, examples: [3] });

export const getVerifications = route({
  auth: "portalSession",
  description:
    "The session's end user's verifications over `[startTime, endTime)` (at most 90 days), outcome by outcome, in buckets of an hour (a window up to 7 days) or a day, zero-filled and oldest first; `keyId` narrows it to one of the user's keys (another's answers 404). Needs the scope `analytics:read`.",
  answer: Type.Array(
    Closed({
      time: Type.Integer({ minimum: 0, examples: [1_767_225_600_000] }),
      total: Count(),
      valid: Count(),
      rateLimited: Count(),
      insufficientPermissions: Count(),
      forbidden: Count(),
      disabled: Count(),
      expired: Count(),
      usageExceeded: Count(),
    }),
  ),
  example: { startTime: 1_767_225_600_000, endTime: 1_767_312_000_000 },
  rootKey: { needs: [] },
  errors: [404, 412],
  schema: Closed({
    startTime: Int(),
    endTime: Int(),
    keyId: Type.Optional(Str(3, 255, ID_PATTERN)),
  }),
  async handle(input, ctx) {
    const res = await ctx.services.portal.getVerifications({
      auth: sessionAuth(ctx, false),
      startTime: BigInt(input.startTime),
      endTime: BigInt(input.endTime),
      keyId: input.keyId,
    });
    return { data: res.buckets.map(point), headers: NO_STORE };
  },
});

const point = (b: VerificationBucket) => ({
  time: Number(b.time),
  total: Number(b.total),
  valid: Number(b.valid),
  rateLimited: Number(b.rateLimited),
  insufficientPermissions: Number(b.insufficientPermissions),
  forbidden: Number(b.forbidden),
  disabled: Number(b.disabled),
  expired: Number(b.expired),
  usageExceeded: Number(b.usageExceeded),
});
