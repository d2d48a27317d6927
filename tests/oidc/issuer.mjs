#!/usr/bin/env node
// Loopback OpenID Connect / OAuth 2.1 authorization server for Cairn's tests.
//
// Built on oidc-provider 9 (OpenID Certified). See README.md in this directory
// for the flags, clients, token claims and the browser sign-in flow.
//
//   node issuer.mjs --port 0 --resource http://127.0.0.1:3000/mcp \
//        --keys /tmp/issuer-keys.json --redirect-uri http://127.0.0.1:3000/ui/callback
//   node issuer.mjs rotate /tmp/issuer-keys.json
//   node issuer.mjs retire /tmp/issuer-keys.json
//
// stdout carries exactly one JSON line once the server is ready; everything
// else goes to stderr.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

// oidc-provider prints its NOTICE lines with console.info, which is stdout.
// The ready line must be the only thing on stdout, so every console method
// that would write to stdout is pointed at stderr before the library loads
// (it is imported dynamically further down for that reason).
const writeStdout = (line) => process.stdout.write(`${line}\n`);
for (const method of ['log', 'info', 'debug']) {
  console[method] = (...args) => console.error(...args);
}

const { calculateJwkThumbprint, exportJWK, generateKeyPair } = await import('jose');

// ---------------------------------------------------------------------------
// Fixed test fixtures
// ---------------------------------------------------------------------------

const HOST = '127.0.0.1';
const SIGNING_ALG = 'ES256';
const OTHER_RESOURCE = 'http://127.0.0.1:1/other';
const ALL_RESOURCE_SCOPES = ['notes:read', 'notes:write', 'notes:delete', 'audit:read'];

const AGENT_SCOPES = ['notes:read', 'notes:write'];
const UI_SCOPES = ['notes:read', 'notes:write', 'notes:delete', 'audit:read'];

// Claims added to access tokens, per client. The human (cairn-ui) claims
// also get `name` = the account id at issue time.
const AGENT_CLAIMS = { org_id: 'acme', cairn_actor: 'agent', name: 'Acme agent' };
const AGENT_NOORG_CLAIMS = { cairn_actor: 'agent', name: 'Acme agent' };
const HUMAN_CLAIMS = { org_id: 'acme', cairn_actor: 'human', cairn_role: 'admin' };

const MACHINE_CLIENTS = {
  'cairn-agent': { secret: 'agent-secret', claims: AGENT_CLAIMS, ttl: 600 },
  'cairn-agent-noorg': { secret: 'noorg-secret', claims: AGENT_NOORG_CLAIMS, ttl: 600 },
  'cairn-agent-short': { secret: 'short-secret', claims: AGENT_CLAIMS, ttl: 2 },
};

const UI_CLIENT_ID = 'cairn-ui';
const HUMAN_ACCESS_TOKEN_TTL = 3600;

// Resource scopes each client may be granted (resource scopes are not
// oidc-provider "static" scopes, so they cannot go in the client's `scope`
// metadata; getResourceServerInfo enforces this table instead).
const RESOURCE_SCOPES_BY_CLIENT = {
  'cairn-agent': AGENT_SCOPES,
  'cairn-agent-noorg': AGENT_SCOPES,
  'cairn-agent-short': AGENT_SCOPES,
  [UI_CLIENT_ID]: UI_SCOPES,
};

// ---------------------------------------------------------------------------
// Signing keys (a JWKS file of private keys; the first key signs)
// ---------------------------------------------------------------------------

async function newSigningKey() {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  // RFC 7638 thumbprint of the public part: unique per key, stable.
  const kid = await calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y });
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d, kid, alg: SIGNING_ALG, use: 'sig' };
}

function readKeyFile(file) {
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read key file ${file}: ${err.message}`);
  }
  if (!parsed || !Array.isArray(parsed.keys) || parsed.keys.length === 0) {
    throw new Error(`key file ${file} must be a JWKS object with a non-empty "keys" array`);
  }
  const kids = new Set();
  parsed.keys.forEach((key, i) => {
    if (key.kty !== 'EC' || key.crv !== 'P-256' || !key.d || !key.x || !key.y) {
      throw new Error(`key file ${file}: keys[${i}] is not a private P-256 (ES256) key`);
    }
    if (typeof key.kid !== 'string' || !key.kid) {
      throw new Error(`key file ${file}: keys[${i}] has no kid`);
    }
    if (kids.has(key.kid)) {
      throw new Error(`key file ${file}: duplicate kid ${key.kid}`);
    }
    kids.add(key.kid);
  });
  return parsed;
}

function writeKeyFile(file, jwks) {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

async function loadOrCreateKeys(file) {
  if (!file) {
    const jwks = { keys: [await newSigningKey()] };
    console.error(`issuer: no --keys file given, using an ephemeral signing key (kid ${jwks.keys[0].kid})`);
    return jwks;
  }
  if (!existsSync(file)) {
    const jwks = { keys: [await newSigningKey()] };
    writeKeyFile(file, jwks);
    console.error(`issuer: created key file ${file} (kid ${jwks.keys[0].kid})`);
    return jwks;
  }
  return readKeyFile(file);
}

async function rotateCommand(file) {
  const jwks = existsSync(file) ? readKeyFile(file) : { keys: [] };
  const key = await newSigningKey();
  jwks.keys.unshift(key);
  writeKeyFile(file, jwks);
  writeStdout(JSON.stringify({ signing_kid: key.kid, kids: jwks.keys.map((k) => k.kid) }));
}

// Signs CLAIMS (a JSON object) with the file's signing key, exactly as the
// issuer signs access tokens: for tests that need a token the issuer would
// never hand out (already expired, no tenant claim, …) under a trusted key.
async function signCommand(file, claims) {
  const [key] = readKeyFile(file).keys;
  const { SignJWT, importJWK } = await import('jose');
  const jwt = await new SignJWT(JSON.parse(claims))
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(await importJWK(key, 'ES256'));
  writeStdout(jwt);
}

function retireCommand(file) {
  const jwks = readKeyFile(file);
  const [first, ...rest] = jwks.keys;
  writeKeyFile(file, { ...jwks, keys: [first] });
  writeStdout(JSON.stringify({ signing_kid: first.kid, kids: [first.kid], retired: rest.map((k) => k.kid) }));
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

const USAGE = `usage:
  node issuer.mjs --resource URL [--port N] [--keys FILE] [--redirect-uri URL]...
  node issuer.mjs rotate FILE   generate a new signing key and put it first
  node issuer.mjs retire FILE   keep only the first (signing) key
  node issuer.mjs sign FILE CLAIMS_JSON   sign claims with the signing key (tests)`;

function fail(message) {
  console.error(`issuer: ${message}`);
  console.error(USAGE);
  process.exit(2);
}

function parseCommandLine() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        port: { type: 'string', default: '0' },
        resource: { type: 'string' },
        keys: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    fail(err.message);
  }
  return parsed;
}

function absoluteHttpUrl(value, flag) {
  const url = URL.parse(value);
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    fail(`${flag} must be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.hash) fail(`${flag} must not contain a fragment`);
  return value;
}

// ---------------------------------------------------------------------------
// Provider
// ---------------------------------------------------------------------------

async function startIssuer({ port, resource, keysFile, redirectUris }) {
  const { default: Provider, errors } = await import('oidc-provider');

  const jwks = await loadOrCreateKeys(keysFile);
  const signingKid = jwks.keys[0].kid;
  const resources = new Set([resource, OTHER_RESOURCE]);
  const uiOrigins = new Set(redirectUris.map((uri) => new URL(uri).origin));

  // Listen first: with --port 0 the issuer URL (which contains the port)
  // is only known once the socket is bound.
  let handler = (req, res) => {
    res.statusCode = 503;
    res.end('starting\n');
  };
  const server = createServer((req, res) => handler(req, res));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const boundPort = server.address().port;
  const issuer = `http://${HOST}:${boundPort}`;

  const clients = Object.entries(MACHINE_CLIENTS).map(([clientId, { secret }]) => ({
    client_id: clientId,
    client_secret: secret,
    client_name: clientId,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  }));
  // Registered as client_secret_basic; oidc-provider treats client_secret_basic
  // and client_secret_post as interchangeable, so both work at /token.

  if (redirectUris.length) {
    clients.push({
      client_id: UI_CLIENT_ID,
      client_name: 'Cairn UI',
      application_type: 'web',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: redirectUris,
      scope: 'openid',
    });
  } else {
    console.error('issuer: no --redirect-uri given, the cairn-ui browser client is not registered');
  }

  const configuration = {
    clients,
    jwks,
    // OAuth 2.1: authorization code only (no implicit / hybrid).
    responseTypes: ['code'],
    findAccount(ctx, id) {
      return {
        accountId: id,
        claims() {
          return { sub: id };
        },
      };
    },
    clientDefaults: {
      id_token_signed_response_alg: SIGNING_ALG,
    },
    cookies: {
      // Signed cookies; a fresh secret per process (state is in memory anyway).
      keys: [randomBytes(32).toString('base64url')],
      // oidc-provider only sets the Secure attribute when the request itself
      // is https (ctx.secure), so on plain http loopback the cookies are
      // plain HttpOnly + SameSite=Lax cookies, which Chromium accepts.
    },
    pkce: {
      required: () => true,
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource(ctx, client, oneOf) {
          if (oneOf) return oneOf.includes(resource) ? resource : oneOf;
          return resource;
        },
        // With an authorization code that carries `openid`, issue the token
        // for the granted resource rather than an opaque userinfo token.
        useGrantedResource() {
          return true;
        },
        getResourceServerInfo(ctx, indicator, client) {
          if (!resources.has(indicator)) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          const allowed = RESOURCE_SCOPES_BY_CLIENT[client.clientId];
          if (!allowed) {
            throw new errors.InvalidTarget(`client ${client.clientId} may not request resource ${indicator}`);
          }
          defaultClientCredentialsScope(ctx, allowed);
          return {
            scope: allowed.join(' '),
            audience: indicator,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: SIGNING_ALG, kid: signingKid } },
          };
        },
      },
    },
    extraTokenClaims(ctx, token) {
      if (token.kind === 'ClientCredentials') {
        const machine = MACHINE_CLIENTS[token.clientId];
        return machine ? { ...machine.claims } : undefined;
      }
      if (token.kind === 'AccessToken' && token.clientId === UI_CLIENT_ID && token.accountId) {
        return { ...HUMAN_CLAIMS, name: token.accountId };
      }
      return undefined;
    },
    clientBasedCORS(ctx, origin, client) {
      return client.clientId === UI_CLIENT_ID && uiOrigins.has(origin);
    },
    ttl: {
      AccessToken: () => HUMAN_ACCESS_TOKEN_TTL,
      AuthorizationCode: () => 60,
      ClientCredentials: (ctx, token, client) => MACHINE_CLIENTS[client.clientId]?.ttl ?? 600,
      IdToken: () => 3600,
      Interaction: () => 3600,
      Session: () => 24 * 3600,
      Grant: () => 24 * 3600,
    },
  };

  const provider = new Provider(issuer, configuration);

  // The dev interaction pages @import a Google Fonts stylesheet; strip it so a
  // browser test never leaves 127.0.0.1.
  provider.use(async (ctx, next) => {
    await next();
    if (typeof ctx.body === 'string' && ctx.response.is('html')) {
      ctx.body = ctx.body.replace(/@import url\(https:\/\/fonts\.googleapis\.com[^)]*\);?/g, '');
    }
  });

  provider.on('server_error', (ctx, err) => console.error('issuer: server_error', err));
  for (const event of ['grant.error', 'authorization.error', 'introspection.error', 'userinfo.error']) {
    provider.on(event, (ctx, err) => {
      console.error(`issuer: ${event}: ${err.error ?? err.name}: ${err.error_description ?? err.message}`);
    });
  }
  provider.on('grant.success', (ctx) => {
    console.error(`issuer: token issued to ${ctx.oidc.client?.clientId} (${ctx.oidc.params.grant_type})`);
  });

  handler = provider.callback();

  writeStdout(JSON.stringify({
    issuer,
    jwks_uri: `${issuer}/jwks`,
    token_endpoint: `${issuer}/token`,
    authorization_endpoint: `${issuer}/auth`,
  }));
  console.error(`issuer: ready at ${issuer} (resource ${resource}, signing kid ${signingKid}, `
    + `${jwks.keys.length} published key(s))`);

  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    console.error(`issuer: ${signal}, shutting down`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

// RFC 6749 section 3.3: a client that omits `scope` gets a pre-defined
// default. For client_credentials the default is every resource scope the
// client is registered for. getResourceServerInfo runs before the grant
// handler reads the scope parameter, so setting it here takes effect.
function defaultClientCredentialsScope(ctx, allowed) {
  const { params } = ctx.oidc;
  if (ctx.oidc.route === 'token' && params?.grant_type === 'client_credentials' && !params.scope) {
    params.scope = allowed.join(' ');
  }
}

// ---------------------------------------------------------------------------

const { values, positionals } = parseCommandLine();
if (values.help) {
  writeStdout(USAGE);
  process.exit(0);
}

try {
  if (positionals.length) {
    const [command, file, ...extra] = positionals;
    if (!['rotate', 'retire', 'sign'].includes(command)) fail(`unknown command ${command}`);
    if (command === 'sign') {
      if (!file || extra.length !== 1) fail('sign takes FILE and CLAIMS_JSON');
      await signCommand(file, extra[0]);
    } else {
      if (!file || extra.length) fail(`${command} takes exactly one FILE argument`);
      if (command === 'rotate') await rotateCommand(file);
      else retireCommand(file);
    }
  } else {
    if (!values.resource) fail('--resource URL is required');
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`invalid --port ${values.port}`);
    await startIssuer({
      port,
      resource: absoluteHttpUrl(values.resource, '--resource'),
      keysFile: values.keys,
      redirectUris: values['redirect-uri'].map((uri) => absoluteHttpUrl(uri, '--redirect-uri')),
    });
  }
} catch (err) {
  // System errors (e.g. EADDRINUSE when --port is taken) need no stack trace.
  console.error(`issuer: ${err.code ? `${err.code}: ${err.message}` : (err.stack ?? err)}`);
  process.exit(1);
}
