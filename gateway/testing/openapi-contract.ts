import { Ajv2020 } from "ajv/dist/2020.js";
import { openApiDocument } from "../src/openapi.ts";

/** The parts of the document read here. */
interface Document {
  paths: Record<string, { post?: { responses: Record<string, { $ref?: string }> } }>;
}

/** A JSON pointer token: `~` and `/` escaped. */
const token = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Holds answers to docs/openapi.json: for an operation's answer, the reasons it does not fit the
 * schema documented for its status (none when it fits), a status the operation does not
 * document among them; undefined for a path that is no operation. Ajv compiles each schema from
 * the document itself, once, on first use; the end-to-end harness runs every answer through it.
 */
export function answerContract(document: object = openApiDocument()) {
  const doc = document as Document;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  ajv.addSchema(doc, "openapi.json");
  return (operation: string, status: number, body: unknown): string[] | undefined => {
    const path = `/v2/${operation}`;
    const op = doc.paths[path]?.post;
    if (op === undefined) return undefined;
    const response = op.responses[String(status)];
    if (response === undefined) return [`${operation} does not document the status ${status}`];
    const at =
      typeof response.$ref === "string" ? response.$ref : `#/paths/${token(path)}/post/responses/${status}`;
    const validate = ajv.getSchema(`openapi.json${at}/content/application~1json/schema`);
    if (validate === undefined) return [`no schema for ${operation} ${status}`];
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) =>
        `${e.instancePath || "/"} ${e.message ?? "is invalid"}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`,
    );
  };
}
