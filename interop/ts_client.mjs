// Drive a running Cairn with the official TypeScript MCP SDK.
// usage: node ts_client.mjs URL   (needs CAIRN_TOKEN and CAIRN_NOTE)
// Lists the tools, reads the markdown tab, writes it with the version read,
// then writes again with the stale version and expects a version_conflict;
// then lists the resources and reads the markdown tab as one; then
// subscribes to the tab (2025-11-25 resources/subscribe), writes it once
// more, and waits for notifications/resources/updated on the SDK's own GET
// stream. The SDK checks every structuredContent against the tool's
// outputSchema on its own.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url] = process.argv.slice(2);
const { CAIRN_TOKEN: token, CAIRN_NOTE: note } = process.env;
const fail = (msg) => { console.error(msg); process.exit(1); };

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "cairn-interop", version: "1.0.0" });
const updates = [];
let told;
const toldOnce = new Promise((resolve) => { told = resolve; });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); told(); });
await client.connect(transport);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === "edit_note_tab")) fail(`no edit_note_tab in ${tools.map((t) => t.name)}`);
const read = await client.callTool({ name: "read_note_tab", arguments: { note_id: note, tab_id: "markdown" } });
const { version, text } = read.structuredContent;
const args = { note_id: note, tab_id: "markdown", expected_version: version, operation: "replace_text", text: `${text}typescript\n` };
const wrote = await client.callTool({ name: "edit_note_tab", arguments: { ...args, idempotency_key: "ts-1" } });
if (wrote.isError) fail(`write refused: ${JSON.stringify(wrote)}`);
const stale = await client.callTool({ name: "edit_note_tab", arguments: { ...args, idempotency_key: "ts-2" } });
if (!stale.isError || stale.structuredContent.error !== "version_conflict") fail(`stale write not refused: ${JSON.stringify(stale)}`);
const { resources } = await client.listResources();
const { resourceTemplates } = await client.listResourceTemplates();
const tabUri = `cairn://notes/${note}/tabs/markdown`;
const { contents } = await client.readResource({ uri: tabUri });
const markdown = contents.find((c) => c.mimeType === "text/markdown");
await client.subscribeResource({ uri: tabUri });
const now = (await client.callTool({ name: "read_note_tab", arguments: { note_id: note, tab_id: "markdown" } })).structuredContent;
const watched = await client.callTool({ name: "edit_note_tab", arguments: {
  note_id: note, tab_id: "markdown", expected_version: now.version, operation: "replace_text", text: `${now.text}watched\n`, idempotency_key: "ts-3" } });
if (watched.isError) fail(`watched write refused: ${JSON.stringify(watched)}`);
const edited = Date.now();
const timeout = new Promise((resolve) => setTimeout(resolve, 15000).unref());
await Promise.race([toldOnce, timeout]);
const toldAfterMs = updates.length ? Date.now() - edited : null;
await client.unsubscribeResource({ uri: tabUri });
console.log(JSON.stringify({
  client: "typescript", protocol: client.getServerVersion()?.name, tools: tools.length,
  tools_with_output_schema: tools.filter((t) => t.outputSchema).length,
  read_version: version, conflict: stale.structuredContent.error, current_version: stale.structuredContent.current_version,
  note_listed_as_resource: resources.some((r) => r.uri === `cairn://notes/${note}`),
  templates: resourceTemplates.length, resource_text: markdown?.text, written_text: args.text,
  subscribed: client.getServerCapabilities()?.resources?.subscribe === true, updates, told_after_ms: toldAfterMs,
}));
await client.close();
