// A real MCP client, the official TypeScript SDK's, for the e2e tests:
//
//   node tsclient.mjs SDK_DIR URL CALLS_JSON
//
// SDK_DIR is an installed @modelcontextprotocol/sdk (the conformance
// suite's); it lists the tools of the MCP endpoint URL, makes each call of
// CALLS_JSON ([{"name", "arguments"}]) and prints
// {"tools": [{name, outputSchema}], "calls": [{ok, result} | {ok: false, error}]}.
// Client.callTool checks structuredContent against the tool's outputSchema
// and throws when a result does not satisfy it: such a call is ok: false.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [, , sdkDir, url, calls] = process.argv;
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "e2e-ts", version: "0.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
const out = { tools: tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema ?? null })), calls: [] };
for (const c of JSON.parse(calls)) {
	try {
		out.calls.push({ ok: true, result: await client.callTool({ name: c.name, arguments: c.arguments }) });
	} catch (e) {
		out.calls.push({ ok: false, error: String(e) });
	}
}
console.log(JSON.stringify(out));
await client.close();
