// The official TypeScript MCP SDK's OAuth client against a Cairn that is its
// own authorization server: discovery (RFC 9728 then RFC 8414), registration
// (dynamic, RFC 7591; or a Client ID Metadata Document URL as client_id),
// authorization code + PKCE S256 through a person's consent, the token
// exchange, then the note steps; then refresh: the SDK refreshes on its own
// after a 401, the refresh token rotates, the spent one is refused and that
// revokes the grant (the newest refresh token is refused too).
//
// usage: node ts_oauth_client.mjs MCP_URL
// env: CAIRN_NOTE (an approved note), CALLBACK_PORT (0 = any),
//      CLIENT_METADATA_URL (set: identify by that document, else register),
//      CLIENT_NAME, AUTH_TIMEOUT_MS (default 60000)
// Protocol: see common.mjs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, discoverOAuthServerInfo, refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import { callbackServer, fail, noteSteps, say, within } from "./common.mjs";

const [url] = process.argv.slice(2);
const env = process.env;
const note = env.CAIRN_NOTE;
const metadataUrl = env.CLIENT_METADATA_URL || undefined;
const clientName = env.CLIENT_NAME || "Cairn interop (TypeScript SDK)";
const authTimeout = Number(env.AUTH_TIMEOUT_MS || 60000);
if (!url || !note) fail("usage: CAIRN_NOTE=... node ts_oauth_client.mjs MCP_URL");

const callback = await callbackServer(Number(env.CALLBACK_PORT || 0));

// Every request the SDK makes (the transport hands its fetch to the auth
// code too): method, path, status; bodies of token calls are not logged.
const requests = [];
const loggingFetch = async (input, init) => {
  const target = new URL(input instanceof Request ? input.url : String(input));
  const response = await fetch(input, init);
  requests.push({ method: init?.method || (input instanceof Request ? input.method : "GET"), path: target.pathname, status: response.status });
  return response;
};

// An OAuthClientProvider that keeps everything in memory (one session).
class Provider {
  constructor() {
    this.saved = { client: undefined, tokens: undefined, verifier: undefined, discovery: undefined };
    this.authorizationUrls = [];
    this.tokenHistory = [];
    if (metadataUrl) this.clientMetadataUrl = metadataUrl;
  }
  get redirectUrl() { return callback.redirectUrl; }
  get clientMetadata() {
    return {
      client_name: clientName,
      redirect_uris: [callback.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() { this.lastState = crypto.randomUUID(); return this.lastState; }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; this.tokenHistory.push(tokens); }
  redirectToAuthorization(authorizationUrl) {
    this.authorizationUrls.push(authorizationUrl.toString());
    say({ authorize: authorizationUrl.toString() });
  }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
  saveDiscoveryState(state) { this.saved.discovery = state; }
  discoveryState() { return this.saved.discovery; }
}

const provider = new Provider();
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: loggingFetch });
  const client = new Client({ name: "cairn-oauth-interop", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
};

let session;
try {
  // First contact: 401, discovery, registration, then a redirect to the person.
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: loggingFetch });
  const client = new Client({ name: "cairn-oauth-interop", version: "1.0.0" });
  let unauthorized = false;
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    unauthorized = true;
  }
  if (!unauthorized) fail("connected without authorizing");
  const answer = await within(authTimeout, callback.answer, "the authorization response at the callback");
  callback.close();
  if (answer.error) {
    // The person said no: the redirect carries the error, our state and the issuer.
    say({ result: { client: "typescript-sdk", refused: answer, state_sent: provider.lastState, requests } });
    process.exit(0);
  }
  if (answer.state !== provider.lastState) fail(`state ${answer.state} is not the one sent (${provider.lastState})`);
  await transport.finishAuth(answer.code);
  session = await connect();
  const { client: c } = session;
  const call = (name, args) => c.callTool({ name, arguments: args });

  const { tools } = await c.listTools();
  const steps = await noteSteps(call, note, env.LINE || "typescript oauth");

  // Refresh, the SDK's own way: the access token it holds is refused (here:
  // replaced by a bad one), the server answers 401, the SDK refreshes with
  // its refresh token and retries.
  const first = provider.saved.tokens;
  provider.saved.tokens = { ...first, access_token: "not-a-token" };
  const listed = await call("list_notes", {});
  const second = provider.saved.tokens;
  const refreshed = {
    call_after_refresh_ok: !listed.isError,
    rotated_refresh_token: !!second.refresh_token && second.refresh_token !== first.refresh_token,
    new_access_token: second.access_token !== first.access_token && second.access_token !== "not-a-token",
    token_type: second.token_type,
    scope: second.scope,
    expires_in: second.expires_in,
  };

  // Once its successor has been used, a spent refresh token is refused, and
  // that revokes the grant: the newest refresh token is refused too; the
  // access token in hand still works. (The token rotated last, presented
  // again at once, is a retry and gets the same successor: see docs/oauth.md.)
  const { authorizationServerUrl, authorizationServerMetadata: metadata, resourceMetadata } = await discoverOAuthServerInfo(new URL(url));
  let newest = null;
  const refuse = async (refreshToken) => {
    try {
      const t = await refreshAuthorization(authorizationServerUrl, { metadata, clientInformation: provider.saved.client, refreshToken, resource: new URL(resourceMetadata.resource) });
      newest = t.refresh_token;
      return "accepted";
    } catch (e) {
      return e.errorCode || e.constructor?.errorCode || String(e);
    }
  };
  refreshed.successor_used = await refuse(second.refresh_token);
  refreshed.spent_refresh_token = await refuse(first.refresh_token);
  refreshed.newest_refresh_token_after_reuse = await refuse(newest);
  const still = await call("read_note_tab", { note_id: note, tab_id: "markdown" });
  refreshed.access_token_still_valid = !still.isError;

  say({
    result: {
      client: "typescript-sdk",
      registration: metadataUrl ? "metadata-document" : "dynamic",
      client_id: provider.saved.client?.client_id,
      authorization_urls: provider.authorizationUrls,
      callback: { state_matches: true, iss: answer.iss },
      issuer: metadata.issuer,
      resource: resourceMetadata.resource,
      granted_scope: first.scope,
      tools: tools.map((t) => t.name),
      ...steps,
      refresh: refreshed,
      requests,
    },
  });
  await session.client.close();
  process.exit(0);
} catch (e) {
  console.error(e?.stack || String(e));
  console.error(JSON.stringify({ requests }));
  process.exit(1);
}
