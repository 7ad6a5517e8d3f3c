// Counts tokens with @anthropic-ai/tokenizer (Claude's older tokenizer: the
// package says it is not accurate for Claude 3 and later models; the
// figures are an estimate). Reads a JSON array of strings on stdin, writes
// a JSON array of their counts.
//   node anthropic-count.mjs DIR   (DIR holds node_modules/@anthropic-ai/tokenizer)
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.argv[2], "package.json"));
const { countTokens } = require("@anthropic-ai/tokenizer");
let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
console.log(JSON.stringify(JSON.parse(input).map((s) => countTokens(s))));
