import type { Migration } from "@latchkey/runtime";

/**
 * The workspace's forward-auth policies (docs/edge.md). Numbered apart from the list's others so
 * that migrations added beside it in the meantime keep their numbers; migrate() applies them in
 * order of version, whatever the gaps.
 */
export const forwardAuthPoliciesMigration: Migration = {
  version: 12,
  name: "forward-auth policies",
  sql: `
-- A policy's definition is the policy file's entry as JSON, checked by the gateway with the
-- file's own schema. position orders a workspace's policies from 0 with no gaps (the first
-- match wins); the default, at most one, has none. Changes to a workspace's policies hold
-- its advisory lock, so that positions stay dense and the count bound holds.
CREATE TABLE forward_auth_policies (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id),
  name text NOT NULL,
  position int,
  is_default boolean NOT NULL DEFAULT false,
  definition jsonb NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  UNIQUE (workspace_id, name),
  CHECK (is_default = (position IS NULL))
);
CREATE INDEX forward_auth_policies_order ON forward_auth_policies (workspace_id, position);
CREATE UNIQUE INDEX forward_auth_policies_default ON forward_auth_policies (workspace_id) WHERE is_default;
`,
};
