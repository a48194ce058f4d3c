import pino, { type Logger } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Anything that could carry a secret is redacted by
 * path, so a careless `log.info({ req })` cannot leak a key.
 */
export function createLogger(service: string, level = process.env["LOG_LEVEL"] ?? "info"): Logger {
  return pino({
    level,
    base: { service },
    redact: {
      paths: [
        "key",
        "*.key",
        "plaintext",
        "*.plaintext",
        "authorization",
        "*.authorization",
        "headers.authorization",
        "rootKey",
        "*.rootKey",
        "password",
        "*.password",
        "encryptionKey",
      ],
      censor: "[redacted]",
    },
  });
}
