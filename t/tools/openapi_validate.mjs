// Validates OpenAPI documents with a third-party validator (@seriousme/openapi-schema-validator).
// Usage: node t/tools/openapi_validate.mjs FILE...   prints "FILE: valid <version>" or the errors;
// exits 1 if any document is invalid.
import { Validator } from "@seriousme/openapi-schema-validator";

let failed = false;
for (const file of process.argv.slice(2)) {
  const validator = new Validator();
  const res = await validator.validate(file);
  if (res.valid) {
    console.log(`${file}: valid ${validator.version}`);
  } else {
    failed = true;
    console.log(`${file}: INVALID ${JSON.stringify(res.errors)}`);
  }
}
process.exit(failed ? 1 : 0);
