// Collects the tool definitions of public MCP servers from npm: starts each
// over stdio, asks tools/list (all pages), writes catalogue.json with every
// tool's source package and version. Nothing is invented: a server that
// does not start or list is left out (and said so on stderr).
//
//   cd DIR && npm install @modelcontextprotocol/sdk <the packages below>
//   node bench/context/collect.mjs DIR > bench/context/catalogue.json
//
// Some servers refuse to start without a variable; they get a placeholder
// value (not a credential: tools/list does not use it).
import { readFileSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";

const dir = process.argv[2];
const require = createRequire(join(dir, "package.json")); // the SDK installed in DIR
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const scratch = mkdtempSync(join(tmpdir(), "mcpcat-"));
const placeholder = "placeholder-not-a-credential";
const servers = [
  ["@modelcontextprotocol/server-everything", "mcp-server-everything", ["stdio"]],
  ["@modelcontextprotocol/server-memory", "mcp-server-memory", []],
  ["@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", [scratch]],
  ["@modelcontextprotocol/server-github", "mcp-server-github", [], { GITHUB_PERSONAL_ACCESS_TOKEN: placeholder }],
  ["@modelcontextprotocol/server-gitlab", "mcp-server-gitlab", [], { GITLAB_PERSONAL_ACCESS_TOKEN: placeholder }],
  ["@modelcontextprotocol/server-slack", "mcp-server-slack", [], { SLACK_BOT_TOKEN: placeholder, SLACK_TEAM_ID: "T0" }],
  ["@modelcontextprotocol/server-google-maps", "mcp-server-google-maps", [], { GOOGLE_MAPS_API_KEY: placeholder }],
  ["@modelcontextprotocol/server-brave-search", "mcp-server-brave-search", [], { BRAVE_API_KEY: placeholder }],
  ["@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer", []],
  ["@modelcontextprotocol/server-sequential-thinking", "mcp-server-sequential-thinking", []],
  ["@modelcontextprotocol/server-postgres", "mcp-server-postgres", ["postgresql://127.0.0.1:1/none"]],
  ["@wonderwhy-er/desktop-commander", "desktop-commander", []],
  ["@playwright/mcp", "playwright-mcp", []],
  ["@notionhq/notion-mcp-server", "notion-mcp-server", []],
  ["mcp-server-kubernetes", "mcp-server-kubernetes", []],
  ["@upstash/context7-mcp", "context7-mcp", []],
  ["tavily-mcp", "tavily-mcp", [], { TAVILY_API_KEY: placeholder }],
  ["firecrawl-mcp", "firecrawl-mcp", [], { FIRECRAWL_API_KEY: placeholder }],
];

const tools = [];
for (const [pkg, bin, args, env] of servers) {
  const version = JSON.parse(readFileSync(join(dir, "node_modules", pkg, "package.json"))).version;
  const transport = new StdioClientTransport({
    command: join(dir, "node_modules", ".bin", bin), args, stderr: "ignore",
    env: { PATH: process.env.PATH, HOME: scratch, ...(env || {}) },
  });
  const client = new Client({ name: "toolrouterd-bench-context", version: "1" }, { capabilities: {} });
  try {
    await withTimeout(client.connect(transport), 30000);
    let cursor, n = 0;
    do {
      const page = await withTimeout(client.listTools(cursor ? { cursor } : {}), 30000);
      for (const t of page.tools) {
        tools.push({ source: { package: pkg, version }, name: t.name, description: t.description ?? "", inputSchema: t.inputSchema });
        n++;
      }
      cursor = page.nextCursor;
    } while (cursor);
    console.error(`${pkg}@${version}: ${n} tools`);
  } catch (e) {
    console.error(`${pkg}@${version}: left out: ${e.message}`);
  } finally {
    await client.close().catch(() => {});
  }
}
console.log(JSON.stringify({ collected_with: "tools/list over stdio (bench/context/collect.mjs)", tools }, null, 1));

function withTimeout(p, ms) {
  return Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`no answer in ${ms} ms`)), ms))]);
}
