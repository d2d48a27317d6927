// mcp-remote (npm), the stdio bridge many desktop clients use for remote
// servers, against a Cairn that is its own authorization server. This script
// is the stdio client: it starts `mcp-remote URL PORT`, passes on the
// authorization URL mcp-remote prints when it cannot open a browser, waits
// until mcp-remote has finished the OAuth flow (discovery, registration or a
// metadata document, PKCE, token), then speaks JSON-RPC over its stdin and
// stdout: initialize, tools/list, then the note steps.
//
// usage: node mcp_remote_client.mjs MCP_URL CALLBACK_PORT
// env: CAIRN_NOTE, MCP_REMOTE_CONFIG_DIR (a fresh dir: mcp-remote keeps its
//      client and tokens there), CLIENT_METADATA_URL (optional),
//      AUTH_TIMEOUT_MS (default 60000)
// Protocol: see common.mjs.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { fail, noteSteps, say, within } from "./common.mjs";

const [url, port] = process.argv.slice(2);
const env = process.env;
const note = env.CAIRN_NOTE;
const authTimeout = Number(env.AUTH_TIMEOUT_MS || 60000);
if (!url || !port || !note || !env.MCP_REMOTE_CONFIG_DIR) fail("usage: CAIRN_NOTE=... MCP_REMOTE_CONFIG_DIR=... node mcp_remote_client.mjs MCP_URL CALLBACK_PORT");

// No browser may open: every opener mcp-remote tries fails at once, so it
// prints the URL and waits on its callback port (the test is the person).
const stubs = mkdtempSync(join(tmpdir(), "no-browser-"));
for (const name of ["xdg-open", "gio", "x-www-browser", "sensible-browser", "www-browser"]) {
  writeFileSync(join(stubs, name), "#!/bin/sh\nexit 1\n");
  chmodSync(join(stubs, name), 0o755);
}
const childEnv = { ...env, PATH: `${stubs}:${env.PATH}`, BROWSER: "false" };
delete childEnv.DISPLAY;
delete childEnv.WAYLAND_DISPLAY;

const proxy = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "mcp-remote", "dist", "proxy.js");
const args = [proxy, url, port, "--allow-http", "--transport", "http-only", "--auth-timeout", String(Math.ceil(authTimeout / 1000))];
if (env.CLIENT_METADATA_URL) args.push("--client-metadata-url", env.CLIENT_METADATA_URL);
const child = spawn(process.execPath, args, { env: childEnv, stdio: ["pipe", "pipe", "pipe"] });
const log = [];
const stop = (code) => { child.kill("SIGTERM"); process.exit(code); };
child.on("exit", (code, signal) => { log.push(`[mcp-remote exited ${code ?? signal}]`); });
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => stop(1));  // never leave mcp-remote behind

// mcp-remote's stderr: the authorization URL, the callback server listening
// (in either order: the URL goes to the person once both are there), then
// "Proxy established".
let authorizeUrl;
let listening = false;
let announced = false;
const established = new Promise((resolve, reject) => {
  let next = false;
  createInterface({ input: child.stderr }).on("line", (line) => {
    log.push(line);
    if (next && /^https?:\/\/\S+$/.test(line.trim())) {
      authorizeUrl = line.trim();
      next = false;
    }
    if (line.includes("Please authorize this client by visiting")) next = true;
    if (line.includes("OAuth callback server running")) listening = true;
    if (authorizeUrl && listening && !announced) {
      announced = true;
      say({ authorize: authorizeUrl });
    }
    if (line.includes("Proxy established successfully")) resolve();
  });
  child.on("exit", () => reject(new Error("mcp-remote exited before the proxy was established")));
});

// JSON-RPC over its stdin/stdout, one message a line.
const pending = new Map();
let nextId = 0;
createInterface({ input: child.stdout }).on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { log.push(`[stdout] ${line}`); return; }
  if (msg.id !== undefined && pending.has(msg.id)) {
    pending.get(msg.id)(msg);
    pending.delete(msg.id);
  }
});
const request = (method, params) => {
  const id = ++nextId;
  const answer = new Promise((resolve) => pending.set(id, resolve));
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return within(30000, answer, method).then((msg) => {
    if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
    return msg.result;
  });
};
const notify = (method, params) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method, ...(params ? { params } : {}) }) + "\n");

try {
  await within(authTimeout + 30000, established, "mcp-remote finishing the OAuth flow");
  const init = await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "cairn-oauth-interop-stdio", version: "1.0.0" },
  });
  notify("notifications/initialized");
  const { tools } = await request("tools/list", {});
  const steps = await noteSteps((name, args) => request("tools/call", { name, arguments: args }), note, env.LINE || "mcp-remote oauth");
  say({
    result: {
      client: "mcp-remote",
      registration: env.CLIENT_METADATA_URL ? "metadata-document" : "dynamic",
      authorization_urls: authorizeUrl ? [authorizeUrl] : [],
      server: init.serverInfo?.name,
      protocol: init.protocolVersion,
      tools: tools.map((t) => t.name),
      ...steps,
      log: log.slice(-40),
    },
  });
  stop(0);
} catch (e) {
  console.error(e?.stack || String(e));
  console.error(log.slice(-60).join("\n"));
  stop(1);
}
