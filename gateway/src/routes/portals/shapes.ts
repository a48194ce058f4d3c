import type { Portal } from "@latchkey/proto/portal/v1/portal_pb";
import { Type } from "@sinclair/typebox";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** A portal's slug: letters, digits, `_` and `-` as Unkey's ResourceIdentifier, 3 to 64 characters. */
export const PORTAL_SLUG_PATTERN = "^[a-zA-Z0-9_-]+$";
export const PortalId = () => Str(3, 255, ID_PATTERN);
export const PortalSlug = () => Str(3, 64, PORTAL_SLUG_PATTERN);
export const PortalName = () => Str(1, 255);
/** The longest a session may last, and the default (docs/limits.md). */
export const MAX_SESSION_TTL_MS = 86_400_000;
export const MIN_SESSION_TTL_MS = 60_000;
export const SessionTtl = () => Type.Integer({ minimum: MIN_SESSION_TTL_MS, maximum: MAX_SESSION_TTL_MS });

/** How the portal's page looks; every field optional. The service checks the logo's URL (https only). */
export const BrandingInput = () =>
  Closed({
    title: Type.Optional(Str(1, 100)),
    accentColor: Type.Optional(Str(7, 7, "^#[0-9a-fA-F]{6}$")),
    logoUrl: Type.Optional(Str(1, 2048)),
  });

export const BrandingAnswer = Closed({
  title: Type.Optional(Type.String({ examples: ["Acme API keys"] })),
  accentColor: Type.Optional(Type.String({ examples: ["#4f46e5"] })),
  logoUrl: Type.Optional(Type.String({ examples: ["https://acme.example/logo.svg"] })),
});

const Millis = () => Type.Integer({ minimum: 0, examples: [1_767_225_600_000] });

export const PortalAnswer = Closed({
  portalId: Type.String({ examples: ["portal_2cGKbMxRjIzhCxo1IdjH3a"] }),
  apiId: Type.String({ examples: ["api_2cGKbMxRjIzhCxo1IdjH3a"] }),
  name: Type.String({ examples: ["Acme customers"] }),
  slug: Type.Optional(Type.String({ examples: ["acme"] })),
  branding: BrandingAnswer,
  sessionTtlMs: Type.Integer({ examples: [86_400_000] }),
  createdAt: Millis(),
  updatedAt: Millis(),
});

export const brandingData = (b: Portal["branding"]) => ({
  ...(b?.title !== undefined ? { title: b.title } : {}),
  ...(b?.accentColor !== undefined ? { accentColor: b.accentColor } : {}),
  ...(b?.logoUrl !== undefined ? { logoUrl: b.logoUrl } : {}),
});

export const portalData = (p: Portal) => ({
  portalId: p.id,
  apiId: p.apiId,
  name: p.name,
  ...(p.slug !== undefined ? { slug: p.slug } : {}),
  branding: brandingData(p.branding),
  sessionTtlMs: Number(p.sessionTtlMs),
  createdAt: Number(p.createdAt),
  updatedAt: Number(p.updatedAt),
});
