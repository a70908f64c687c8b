// Compiles every schema of a `tools/list` answer with Ajv in strict mode (unknown
// keywords and formats are errors) plus the standard formats of ajv-formats, as the
// official TypeScript SDKs configure it but strict. Usage: node check.mjs TOOLS.json
// Prints one line per schema that does not compile and exits 1 if there is any.
import { readFileSync } from "node:fs";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";

const addFormats = addFormatsModule.default ?? addFormatsModule;
const tools = JSON.parse(readFileSync(process.argv[2], "utf8"));
const failures = [];
let compiled = 0;
for (const tool of tools) {
  for (const which of ["inputSchema", "outputSchema"]) {
    const schema = tool[which];
    if (schema === undefined) continue;
    const warnings = [];
    const logger = { log() {}, warn: (...m) => warnings.push(m.join(" ")), error: (...m) => warnings.push(m.join(" ")) };
    const ajv = new Ajv({ strict: true, allowUnionTypes: true, validateFormats: true, logger });
    addFormats(ajv);
    try {
      ajv.compile(schema);
      compiled += 1;
      for (const warning of warnings) failures.push(`${tool.name} ${which}: warning: ${warning}`);
    } catch (error) {
      failures.push(`${tool.name} ${which}: ${error.message}`);
    }
  }
}
for (const failure of failures) console.log(failure);
console.log(`${compiled} schemas compiled, ${failures.length} problems`);
process.exit(failures.length === 0 && compiled > 0 ? 0 : 1);
