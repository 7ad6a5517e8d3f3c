// Loaded with `node --import` on Node < 22 by scripts/run-mcp-conformance.sh:
// registers hooks.mjs, which serves fs.mjs for imports of "fs" when
// fs.globSync (Node 22+) is missing.
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);
