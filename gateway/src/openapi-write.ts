import { writeFileSync } from "node:fs";
import { openApiJson } from "./openapi.ts";

// `npm run openapi`: writes docs/openapi.json from the route table (openapi.test.ts checks it is current).
const file = new URL("../../docs/openapi.json", import.meta.url);
writeFileSync(file, openApiJson());
process.stdout.write(`wrote ${file.pathname}\n`);
