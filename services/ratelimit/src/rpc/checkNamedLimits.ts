import type {
  CheckNamedLimitsRequest,
  CheckNamedLimitsResponse,
  NamedLimitGroup,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { invalidInput } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { countNamedLimits, type NamedLimitGroupCheck } from "../named-limits.ts";
import { integer } from "../validate.ts";

/**
 * RatelimitService.CheckNamedLimits: the named limits of a batch of
 * verifications, for the keys service. Each group (one verification) passes
 * and is counted whole or not at all; groups do not affect each other.
 *
 * It trusts its caller: no root-key permission is checked, because the keys
 * service has already authorized the verification, and the gateway has no
 * route to it. Input is still checked, since a zero duration would break a
 * counter; a malformed group fails the whole call (the keys service validated
 * these limits when they were stored, so that is a bug, not an outcome).
 */
export function checkNamedLimits(deps: RatelimitDeps) {
  return async (req: CheckNamedLimitsRequest): Promise<CheckNamedLimitsResponse> => {
    const groups = req.groups.map(validGroup);
    const outcomes = await countNamedLimits(deps, groups);
    // Literals rather than create(): once per limit of every verification, on the hot path.
    return {
      $typeName: "ratelimit.v1.CheckNamedLimitsResponse",
      groups: outcomes.map((group) => ({
        $typeName: "ratelimit.v1.NamedLimitGroupResult",
        passed: group.every((o) => o.success),
        results: group.map((o) => ({
          $typeName: "ratelimit.v1.NamedLimitResult",
          limit: BigInt(o.limit),
          remaining: BigInt(o.remaining),
          reset: BigInt(o.reset),
          exceeded: !o.success,
        })),
      })),
    };
  };
}

function validGroup(group: NamedLimitGroup, g: number): NamedLimitGroupCheck {
  const at = `/groups/${g}`;
  if (!group.workspaceId) throw invalidInput(`${at}/workspaceId`, "must not be empty");
  return {
    workspaceId: group.workspaceId,
    checks: group.limits.map((l, i) => {
      const where = `${at}/limits/${i}`;
      if (!l.owner) throw invalidInput(`${where}/owner`, "must not be empty", "Send the key or identity id.");
      if (!l.name) throw invalidInput(`${where}/name`, "must not be empty", "Send the limit's name.");
      return {
        owner: l.owner,
        name: l.name,
        limit: integer(l.limit, `${where}/limit`, 0),
        duration: integer(l.duration, `${where}/duration`, 1),
        cost: l.cost === undefined ? 1 : integer(l.cost, `${where}/cost`, 0),
      };
    }),
  };
}
