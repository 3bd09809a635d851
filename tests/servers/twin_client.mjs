// The TypeScript SDK's client as an agent: it runs a plan against one MCP server and prints, as
// one JSON object on stdout, everything it saw (tests/acceptance/test_twin.py compares these).
//
//   node twin_client.mjs PLAN_JSON stdio COMMAND [ARG...]
//   node twin_client.mjs PLAN_JSON http URL
//
// PLAN_JSON: {"progress": [tool, args], "resources": bool, "prompts": [[name, args]...], "reads": [uri...],
// "calls": [[tool, args]...]}, each part optional; the progress call's notifications are kept too.
// A request the server refuses is kept as {"error": [code, message]}: the comparison sees it too.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [plan, kind, ...target] = process.argv.slice(2);
const asked = JSON.parse(plan);

async function kept(request) {
  try {
    return await request();
  } catch (err) {
    return { error: [err.code ?? null, String(err.message)] };
  }
}

const transport =
  kind === "http"
    ? new StreamableHTTPClientTransport(new URL(target[0]))
    : new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "ignore" });
const client = new Client({ name: "toolreplay-twin-test", version: "1.0.0" });
const timer = setTimeout(() => {
  process.stderr.write("twin_client: no answer within 60 s\n");
  process.exit(3);
}, 60000);
await client.connect(transport);
const seen = {
  server: [client.getServerVersion(), client.getServerCapabilities(), client.getInstructions() ?? null],
  tools: await kept(() => client.listTools()),
};
if (asked.progress) {
  const progress = [];
  const [name, args] = asked.progress;
  const onprogress = (note) => progress.push(note);
  seen.progress = [await kept(() => client.callTool({ name, arguments: args }, undefined, { onprogress })), progress];
}
if (asked.resources) {
  seen.resources = await kept(() => client.listResources());
  seen.templates = await kept(() => client.listResourceTemplates());
}
seen.reads = [];
for (const uri of asked.reads ?? []) seen.reads.push(await kept(() => client.readResource({ uri })));
if ((asked.prompts ?? []).length) seen.promptList = await kept(() => client.listPrompts());
seen.prompts = [];
for (const [name, args] of asked.prompts ?? []) {
  seen.prompts.push(await kept(() => client.getPrompt({ name, arguments: args })));
}
seen.calls = [];
for (const [name, args] of asked.calls ?? []) {
  seen.calls.push(await kept(() => client.callTool({ name, arguments: args })));
}
await client.close();
clearTimeout(timer);
process.stdout.write(JSON.stringify(seen) + "\n");
