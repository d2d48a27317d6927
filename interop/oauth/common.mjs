// What the OAuth interop scripts share: the line protocol the test reads,
// a loopback callback server, bounded waits, and the note steps every
// client runs (list tools, read, append a line, a stale write, read back).
//
// Protocol on stdout, one JSON object a line:
//   {"authorize": URL}   send a person to URL (the test approves it in Chromium)
//   {"event": ...}       something the test may check (optional)
//   {"result": {...}}    what the client saw; the last line on success
// Anything else goes to stderr; a failure exits non-zero.
import http from "node:http";

export const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
export const fail = (msg) => { console.error(msg); process.exit(1); };

export function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// A loopback server that takes one authorization response at `path`.
// `answer` resolves with the query's parameters (code, state, iss, error...).
export async function callbackServer(port, path = "/callback") {
  let deliver;
  const answer = new Promise((resolve) => { deliver = resolve; });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://127.0.0.1:${port}`);
    if (url.pathname !== path) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "content-type": "text/plain" }).end("You may close this page.");
    deliver(Object.fromEntries(url.searchParams));
  });
  await new Promise((resolve, reject) => { server.once("error", reject); server.listen(port, "127.0.0.1", resolve); });
  return { answer, redirectUrl: `http://127.0.0.1:${server.address().port}${path}`, close: () => server.close() };
}

// The steps every client runs on the note it was given, through `call`
// (tool name, arguments) → the tool result ({isError?, structuredContent}).
export async function noteSteps(call, note, line) {
  const read = await call("read_note_tab", { note_id: note, tab_id: "markdown" });
  if (read.isError) throw new Error(`read refused: ${JSON.stringify(read)}`);
  const { version } = read.structuredContent;
  const edit = { note_id: note, tab_id: "markdown", operation: "append_text", text: `${line}\n`, expected_version: version };
  const wrote = await call("edit_note_tab", { ...edit, idempotency_key: `${line}-1` });
  if (wrote.isError) throw new Error(`write refused: ${JSON.stringify(wrote)}`);
  const stale = await call("edit_note_tab", { ...edit, text: `${line} (stale)\n`, idempotency_key: `${line}-2` });
  const back = await call("read_note_tab", { note_id: note, tab_id: "markdown" });
  return {
    read_version: version,
    written_version: wrote.structuredContent?.version,
    conflict: stale.isError ? stale.structuredContent?.error : null,
    conflict_current_version: stale.structuredContent?.current_version,
    read_back: back.structuredContent?.text,
    read_back_version: back.structuredContent?.version,
  };
}
