// The official MCP TypeScript SDK client against `plur mcp`, over stdio or streamable HTTP.
// usage: node sdk_client.mjs stdio <command> [args...]  |  PLUR_MCP_TOKEN=... node sdk_client.mjs http <url>
// Prints one JSON object: what each call answered and how long it took (ms), for tests/test_clients.py.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
const t0 = performance.now();
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "pipe" })
  : new StreamableHTTPClientTransport(new URL(rest[0]), {
    // plur's HTTP transport wants the home's MCP token (plur/mcp/auth.py); the test passes it in the environment
    requestInit: { headers: { Authorization: `Bearer ${process.env.PLUR_MCP_TOKEN ?? ""}` } },
  });
let stderr = "";
if (mode === "stdio") transport.stderr?.on("data", (d) => { stderr += d.toString(); });
const client = new Client({ name: "plur-sdk-test", version: "1.0.0" });
const out = { timings_ms: {} };
async function timed(name, fn) {
  const t = performance.now();
  const r = await fn();
  out.timings_ms[name] = Math.round(performance.now() - t);
  return r;
}
const opts = { timeout: 120000 };
await timed("connect", () => client.connect(transport));
const tools = await timed("tools/list", () => client.listTools());
out.tools = tools.tools.map((t) => t.name).sort();
out.learn_types = tools.tools.find((t) => t.name === "learn").inputSchema.properties.type.enum;
const recall = await timed("recall", () => client.callTool({ name: "recall", arguments: { query: "what is my dog called?", k: 3 } }, undefined, opts));
out.recall = recall.structuredContent;
const learned = await timed("learn", () => client.callTool({ name: "learn", arguments: { statement: `The SDK client ran over ${mode}.`, type: "fact" } }, undefined, opts));
out.learn = learned.structuredContent;
const id = learned.structuredContent.engram.id;
out.templates = (await timed("resources/templates/list", () => client.listResourceTemplates())).resourceTemplates.map((t) => t.uriTemplate);
out.resource = JSON.parse((await timed("resources/read", () => client.readResource({ uri: `plur://engram/${id}` }))).contents[0].text);
try {
  await client.readResource({ uri: "plur://engram/ENG-2026-01-01-000000" });
  out.absent = "no error";
} catch (e) {
  out.absent = String(e.message);
}
out.prompts = (await timed("prompts/list", () => client.listPrompts())).prompts.map((p) => p.name);
out.prompt = (await timed("prompts/get", () => client.getPrompt({ name: "memory", arguments: { query: "what is my dog called?" } }))).messages[0].content.text;
await client.callTool({ name: "forget", arguments: { engram_id: id } }, undefined, opts);
out.status = (await client.callTool({ name: "status", arguments: {} })).structuredContent;
out.total_ms = Math.round(performance.now() - t0);
await client.close();
out.stderr = stderr;
console.log(JSON.stringify(out));
