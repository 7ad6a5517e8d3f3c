// An MCP Apps host's side, as far as the gateway sees it, with the
// official TypeScript SDK client: it lists the tools of URL (bearer KEY),
// calls each tool named in CALLS_JSON ([{"name", "arguments"}]), and reads
// every ui:// resource a listed tool names in _meta.ui.resourceUri. It
// prints {"tools", "results", "reads": {uri: result | {error}}} as JSON.
// The SDK is the installed package in MCP_SDK_DIR.
//
//   node apps-client.mjs URL KEY CALLS_JSON
import { pathToFileURL } from "node:url";
import path from "node:path";

const [url, key, calls] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(process.env.MCP_SDK_DIR, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const headers = key ? { Authorization: `Bearer ${key}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "e2e-apps-host", version: "1.0.0" });
const out = { tools: [], results: [], reads: {} };
try {
  await client.connect(transport);
  out.tools = (await client.listTools()).tools;
  for (const c of JSON.parse(calls || "[]") ?? []) {
    try {
      out.results.push(await client.callTool({ name: c.name, arguments: c.arguments ?? {} }));
    } catch (e) {
      out.results.push({ error: String(e) });
    }
  }
  for (const t of out.tools) {
    const uri = t._meta?.ui?.resourceUri;
    if (!uri || uri in out.reads) continue;
    try {
      out.reads[uri] = await client.readResource({ uri });
    } catch (e) {
      out.reads[uri] = { error: String(e) };
    }
  }
} catch (e) {
  out.error = String(e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
