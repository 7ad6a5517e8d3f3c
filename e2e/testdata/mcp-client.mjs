// A real MCP client (the official TypeScript SDK) for the e2e tests: it
// connects to URL with the bearer KEY, lists the tools, makes the calls
// given as JSON ([{"name": …, "arguments": {…}}]) and prints one JSON
// object {"protocol", "tools", "results"} on stdout. The SDK is found in
// the directory named by MCP_SDK_DIR (an installed node_modules package).
//
//   node mcp-client.mjs URL KEY CALLS_JSON
import { pathToFileURL } from "node:url";
import path from "node:path";

const [url, key, calls] = process.argv.slice(2);
const sdk = process.env.MCP_SDK_DIR;
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const headers = key ? { Authorization: `Bearer ${key}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "e2e-ts", version: "1.0.0" });
const out = { tools: [], results: [] };
try {
  await client.connect(transport);
  out.protocol = transport.protocolVersion;
  out.session = transport.sessionId ?? "";
  out.tools = (await client.listTools()).tools;
  for (const c of JSON.parse(calls || "[]")) {
    try {
      out.results.push(await client.callTool({ name: c.name, arguments: c.arguments ?? {} }));
    } catch (e) {
      out.results.push({ error: String(e) });
    }
  }
} catch (e) {
  out.error = String(e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
