// Checks answers against the body schemas of OpenAPI 3.1 documents with Ajv (JSON Schema 2020-12,
// the dialect of OpenAPI 3.1) and ajv-formats, an implementation independent of the module.
// Usage: node t/tools/openapi_body_check.mjs CASES.json
//   CASES.json: [{"name", "doc": FILE, "path": "/users/{id}", "method": "get", "status": "200",
//                 "media": "application/json", "body": <the answer's JSON>}, ...]
// Prints "ok NAME" or "FAIL NAME <errors>" per case (or "MISSING NAME" when the document has no
// schema there); exits 1 if any case is not ok.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const escape = (s) => s.replace(/~/g, "~0").replace(/\//g, "~1");
const validators = new Map();
let failed = false;
for (const c of cases) {
  if (!validators.has(c.doc)) {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(JSON.parse(readFileSync(c.doc, "utf8")), "doc");
    validators.set(c.doc, ajv);
  }
  const ajv = validators.get(c.doc);
  const pointer = `/paths/${escape(c.path)}/${c.method}/responses/${c.status}/content/${escape(c.media)}/schema`;
  const validate = ajv.getSchema(`doc#${pointer}`);
  if (!validate) {
    failed = true;
    console.log(`MISSING ${c.name}`);
  } else if (validate(c.body)) {
    console.log(`ok ${c.name}`);
  } else {
    failed = true;
    console.log(`FAIL ${c.name} ${JSON.stringify(validate.errors)}`);
  }
}
process.exit(failed ? 1 : 0);
