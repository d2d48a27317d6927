// The people's editor. Plain ES modules, no build step: this file, the
// markdown renderer (marked) and the sanitizer (DOMPurify), all served by the
// ui component under a CSP that allows scripts from this origin only.
//
// Guarantees the page keeps:
// - every save is a conditional write (a markdown tab's: expected_version =
//   the tab's version the draft started from, `version_scope: "tab"`, so
//   approving or renaming the note does not make it stale) with an
//   idempotency key that stays the same while the text does, so a retry
//   never lands twice;
// - a draft exists only while it differs from the text it started from;
// - the open note is followed on its `events` stream (one cheap read a
//   second of `changes` when the stream cannot be had): a write by someone
//   else refreshes the text in place, or, over a draft, is offered as a
//   one-click merge;
// - what the person typed is kept in localStorage (per person, note and
//   tab) until a save of exactly that text is acknowledged: a stale save, a
//   refused one, a reload or a closed tab never loses it;
// - a stale save of the markdown tab opens the three-way merge: their
//   changes and the person's that do not overlap are merged (the person's
//   highlighted), overlapping ones are shown side by side to pick or edit;
// - text written by others is set as text (textContent), except rendered
//   markdown, which goes through DOMPurify; links are http(s) only.

import { marked } from '/ui/vendor/marked.esm.js';
import DOMPurify from '/ui/vendor/purify.es.mjs';

const TOKEN = 'cairn.token';
const PKCE = 'cairn.pkce';
// The refresh token (Cairn's own server): single-use, rotated by every refresh.
const REFRESH = 'cairn.refresh';
// Where to go back to after a sign-in started from a route (a consent request).
const AFTER = 'cairn.after';
const CLAIM_TTL = 60;
const HEARTBEAT_MS = 20000;
const PRESENCE_MS = 1000;
// After the `events` stream was refused or broke, how long polling stands in before it is tried again.
const STREAM_RETRY_MS = 5000;

// ---------------------------------------------------------------- DOM ----

/** An element with attributes, listeners and children; strings become text nodes. */
function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = true;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

const $ = (sel) => document.querySelector(sel);
const main = () => $('#main');

function status(text, bad = false) {
  const s = $('#status');
  s.textContent = text || '';
  s.classList.toggle('bad', !!bad);
}

/** A link to an http(s) URL; anything else (javascript:, data:) is shown as text. */
function safeLink(url, label) {
  try {
    const u = new URL(url);
    if (u.protocol === 'https:' || u.protocol === 'http:') {
      return h('a', { href: u.href, rel: 'noopener noreferrer nofollow', target: '_blank' }, label || url);
    }
  } catch { /* not a URL */ }
  return h('span', { class: 'muted' }, label || url);
}

/** Markdown written by anyone, rendered and sanitized. */
function renderMarkdown(el, text) {
  const html = marked.parse(text || '', { async: false, gfm: true });
  el.replaceChildren(DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS: ['style', 'form', 'input', 'button', 'select', 'textarea', 'option', 'label'] }));
  for (const a of el.querySelectorAll('a[href]')) {
    if (!/^https?:/i.test(a.getAttribute('href'))) a.removeAttribute('href');
    a.setAttribute('rel', 'noopener noreferrer nofollow');
    a.setAttribute('target', '_blank');
  }
}

const when = (t) => (t ? new Date(t).toLocaleString() : '');
/** A provenance label ("Pat (pat-42, agent)") as a person reads it: "Pat (agent)". */
const byName = (label) => String(label ?? '').replace(/^(.*) \(([^(),]+), (agent|human)\)$/, '$1 ($3)');
/** A time of day, local and short (14:05): when a claim runs out. */
const clock = (t) => (t ? new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : '');
const enc = encodeURIComponent;
const newKey = () => 'ui-' + Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');

// ------------------------------------------------------------ sign-in ----

function b64urlDecode(s) {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

const token = () => localStorage.getItem(TOKEN);

/** A token's claims, for display and for naming drafts (never trusted:
 * the server checks), or null when it is not a readable JWT. `tenant` and
 * `name` are read through the server's claims mapping (`/ui/config.json`). */
function claimsOf(t) {
  try {
    const c = JSON.parse(b64urlDecode(t.split('.')[1]));
    if (!c || typeof c !== 'object') return null;
    const map = (typeof config === 'object' && config.claims) || {};
    return { ...c, tenant: map.fixed_tenant || c[map.tenant || 'tenant'], name: c[map.name || 'name'] };
  } catch {
    return null;
  }
}

const me = () => claimsOf(token() || '') || {};
const expired = (c) => typeof c.exp === 'number' && c.exp * 1000 <= Date.now();

/** Whether this browser holds a sign-in of any kind: an access token
 * (valid, expired or unreadable) or a refresh token. Such a sign-in is the
 * person's own: no link replaces it without asking. */
const signedInHere = () => !!(localStorage.getItem(TOKEN) || localStorage.getItem(REFRESH));

/** Whether two sign-ins are one account: the same tenant and subject
 * (display names are not accounts: two people may share one). */
const sameAccount = (a, b) => !!a && !!b && a.sub != null && a.sub === b.sub && (a.tenant || '') === (b.tenant || '');

/** A sign-in in words: name, role and tenant; when `other` has the same
 * name, the account too, so that two people of one name are told apart. */
function described(c, other) {
  if (!c) return 'someone whose sign-in this browser cannot read';
  const bits = [c.role, c.tenant && 'tenant ' + c.tenant];
  if (other && c.name && c.name === other.name) bits.push('account ' + c.sub);
  const more = bits.filter(Boolean).join(', ');
  return (c.name || c.sub || 'someone') + (more ? ' (' + more + ')' : '');
}

/** A sign-in link's `#token=…`. The token leaves the address bar and the
 * tab's history at once (the entry is replaced, so Back does not bring it
 * back). A token that cannot be read or has expired is refused with a plain
 * message. When this browser holds a sign-in of another account (or one it
 * cannot read), in whatever state, the person is asked first
 * (`pendingLink`): nothing is replaced or revoked until they say so.
 * Returns what to tell the person, if anything. */
function takeTokenFromFragment() {
  const m = location.hash.match(/^#token=([^&]*)/);
  if (!m) return null;
  history.replaceState(null, '', location.pathname + '#/');
  let offered;
  try {
    offered = decodeURIComponent(m[1]).trim();
  } catch {
    offered = '';
  }
  const claims = claimsOf(offered);
  if (!claims) return { refused: 'That sign-in link does not hold a sign-in we can read. Ask for a new link.' };
  if (expired(claims)) return { refused: 'That sign-in link has expired. Ask for a new link.' };
  // The same account (or nobody here): a newer token of it, the refresh token kept.
  if (!signedInHere() || sameAccount(claimsOf(token() || ''), claims)) {
    localStorage.setItem(TOKEN, offered);
    return null;
  }
  pendingLink = { claims, accept: () => { localStorage.setItem(TOKEN, offered); return dropRefresh(); }, decline: () => {} };
  return null;
}

/** A token given by hand replaces a sign-in with Cairn's own server: its refresh token is revoked and forgotten. */
function dropRefresh() {
  const rt = localStorage.getItem(REFRESH);
  localStorage.removeItem(REFRESH);
  return revokeRefresh(rt);
}

/** A sign-in of another account, waiting for the person to choose:
 * `claims` (whom it signs in), `accept()` (replace the person's sign-in with
 * it) and `decline()` (undo what the link did; the person's sign-in stays). */
let pendingLink = null;

/** A question card: `stay` (focused, also Escape) and `go` are
 * `[id, label, action]`; `lines` are its paragraphs. */
function askCard(id, title, lines, stay, go) {
  const card = h('section', { class: 'card', id, role: 'alertdialog', 'aria-labelledby': id + '-title' },
    h('h2', { id: id + '-title' }, title),
    lines.map((l) => h('p', {}, l)),
    h('div', { class: 'row' },
      h('button', { id: stay[0], class: 'primary', onclick: stay[2] }, stay[1]),
      h('button', { id: go[0], onclick: go[2] }, go[1])));
  main().replaceChildren(card);
  card.addEventListener('keydown', (e) => { if (e.key === 'Escape') stay[2](); });
  $('#' + stay[0]).focus();
}

/** The warning every link question carries. */
const unexpected = () => h('span', { class: 'muted' }, 'If you did not expect this link, stay: someone may be trying to make you work under their name.');

/** Asks whether to switch to the account a link signs in as. */
function showSwitchPrompt() {
  const { claims, accept, decline } = pendingLink;
  const now = claimsOf(token() || '');
  const stay = async () => { pendingLink = null; await decline(); route(); };
  const go = async () => { pendingLink = null; await accept(); route(); };
  askCard('switch-identity', 'Switch who you are signed in as?', [
    ['You are signed in as ', h('strong', {}, described(now, claims)), '. The link you opened signs in as ', h('strong', {}, described(claims, now)), '.'],
    [unexpected()],
  ], ['switch-stay', 'Stay as ' + ((now && (now.name || now.sub)) || 'yourself'), stay],
  ['switch-go', 'Switch to ' + (claims.name || claims.sub || 'the link\'s account'), go]);
}

async function loadConfig() {
  try {
    const r = await fetch('/ui/config.json');
    return r.ok ? await r.json() : {};
  } catch {
    return {};
  }
}

/** The authorization server's metadata (RFC 8414, else OpenID discovery). */
async function discover(issuer) {
  const base = issuer.replace(/\/$/, '');
  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    const r = await fetch(base + path).catch(() => null);
    if (r && r.ok) return r.json();
  }
  throw new Error('no authorization server metadata at ' + base);
}

/** Authorization code + PKCE as a public client: off to the authorization server. */
async function oauthStart(cfg) {
  const meta = await discover(cfg.authorization_server);
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  const redirect = location.origin + '/';
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, redirect, token_endpoint: meta.token_endpoint, client_id: cfg.client_id, resource: cfg.resource }));
  const u = new URL(meta.authorization_endpoint);
  const q = { response_type: 'code', client_id: cfg.client_id, redirect_uri: redirect, scope: cfg.scope, state, code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: 'S256' };
  if (cfg.resource) q.resource = cfg.resource;
  u.search = new URLSearchParams(q).toString();
  location.assign(u.href);
}

/** What to tell a person whom Cairn's own server does not know in this browser. */
const NO_SESSION = 'You are not signed in here. Open the sign-in link your admin gave you (or the one `cairn up` printed).';

/** Set when the authorization server just answered `login_required`: the
 * page then says so instead of asking it again (no sign-in loop). */
let loginRefused = false;

/** Back from the authorization server with `?code=&state=`: exchange the
 * code. Returns why a sign-in failed, if it did. After a sign-in started
 * from a route (a consent request), the page goes back to that route. */
async function oauthFinish() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return null;
  const saved = JSON.parse(sessionStorage.getItem(PKCE) || 'null');
  sessionStorage.removeItem(PKCE);
  const after = sessionStorage.getItem(AFTER);
  history.replaceState(null, '', location.pathname + '#/');
  if (q.get('error') === 'login_required') {
    loginRefused = true;
    return NO_SESSION;
  }
  sessionStorage.removeItem(AFTER);
  if (q.has('error')) return 'Sign-in refused: ' + (q.get('error_description') || q.get('error'));
  if (!saved || saved.state !== q.get('state')) return 'Sign-in refused: the answer does not belong to this page (state mismatch)';
  const body = new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code'), redirect_uri: saved.redirect, client_id: saved.client_id, code_verifier: saved.verifier });
  if (saved.resource) body.set('resource', saved.resource);
  const r = await fetch(saved.token_endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }).catch(() => null);
  const t = r ? await r.json().catch(() => ({})) : {};
  if (!r || !r.ok || !t.access_token) return 'Sign-in failed at the token endpoint: ' + (t.error_description || t.error || 'no answer');
  const adopt = () => {
    const previous = localStorage.getItem(REFRESH);
    if (t.refresh_token) localStorage.setItem(REFRESH, t.refresh_token);
    else localStorage.removeItem(REFRESH);
    localStorage.setItem(TOKEN, t.access_token);
    return previous !== t.refresh_token ? revokeRefresh(previous) : null;
  };
  // Another account than the one signed in here (a one-time link made for
  // someone else): the person chooses; declining gives back what the link
  // started (its refresh token, its session cookie).
  const fresh = claimsOf(t.access_token);
  if (signedInHere() && !sameAccount(claimsOf(token() || ''), fresh)) {
    const decline = (leaving) => Promise.all([revokeRefresh(t.refresh_token, leaving), endSession(leaving)]);
    const pending = { claims: fresh || {}, accept: adopt, decline };
    pendingLink = pending;
    // Leaving the page without an answer declines.
    window.addEventListener('pagehide', () => { if (pendingLink === pending) decline(true); }, { once: true });
  } else {
    adopt();
  }
  if (after && after.startsWith('#/')) history.replaceState(null, '', location.pathname + after);
  return null;
}

/** Ends the session cookie of Cairn's own server in this browser (best effort). */
function endSession(keepalive = false) {
  return fetch('/oauth/session', { method: 'DELETE', credentials: 'same-origin', keepalive }).catch(() => {});
}

// ------------------------------------------------------------ refresh ----

/** Seconds before `exp` at which the access token is refreshed: a minute,
 * or a fifth of a short token's life. */
function refreshMargin(c) {
  const life = typeof c.iat === 'number' ? c.exp - c.iat : c.exp - Date.now() / 1000;
  return Math.min(60, Math.max(1, life / 5));
}
const dueForRefresh = (t) => {
  const c = claimsOf(t || '');
  return !c || (typeof c.exp === 'number' && c.exp * 1000 - refreshMargin(c) * 1000 <= Date.now());
};

/** Where the refresh grant goes: the configured authorization server's token endpoint. */
async function tokenEndpoint() {
  if (config.own) return location.origin + '/oauth/token';
  return (await discover(config.authorization_server)).token_endpoint;
}

/** Serialized across this browser's tabs: a refresh token is single-use,
 * and presenting one twice revokes the whole sign-in. Without the Web
 * Locks API (a page not on a secure origin) the refresh runs unguarded. */
function withRefreshLock(f) {
  return navigator.locks ? navigator.locks.request('cairn-refresh', f) : f();
}

/** Trades the refresh token for a new access token (and a new refresh
 * token). `seen` is the access token the caller found wanting: when another
 * tab has refreshed meanwhile, its result is used and nothing is sent.
 * Returns true when the page holds a usable access token afterwards. A
 * refused refresh (`invalid_grant`) signs the person out in every tab. */
async function refresh(seen) {
  return withRefreshLock(async () => {
    const current = token();
    if (current && current !== seen && !dueForRefresh(current)) return true;
    const rt = localStorage.getItem(REFRESH);
    if (!rt || !config.client_id) return false;
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: rt, client_id: config.client_id });
    if (config.resource) body.set('resource', config.resource);
    let r;
    try {
      r = await fetch(await tokenEndpoint(), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    } catch {
      return false; // unreachable: keep the sign-in, the next call tries again
    }
    const t = await r.json().catch(() => ({}));
    // Signed out (or in again) meanwhile, in this tab or another: that stands.
    if (localStorage.getItem(REFRESH) !== rt) return !!token() && !dueForRefresh(token());
    if (r.ok && t.access_token) {
      if (t.refresh_token) localStorage.setItem(REFRESH, t.refresh_token);
      localStorage.setItem(TOKEN, t.access_token);
      scheduleRefresh();
      return true;
    }
    if (r.status === 400 || r.status === 401) {
      forget();
      signOutNotice = 'Your sign-in has ended (you signed out elsewhere, or it was revoked). Sign in again; your drafts are kept in this browser.';
      route();
    }
    return false;
  });
}

let refreshTimer = null;

/** One timer for the page: refresh shortly before the access token expires. */
function scheduleRefresh() {
  clearTimeout(refreshTimer);
  const c = claimsOf(token() || '');
  if (!c || typeof c.exp !== 'number' || !localStorage.getItem(REFRESH)) return;
  // At least a second apart, whatever the clocks say: never a refresh loop.
  const wait = Math.max(1000, c.exp * 1000 - refreshMargin(c) * 1000 - Date.now());
  refreshTimer = setTimeout(() => refresh(token()), Math.min(wait, 2 ** 31 - 1));
}

/** Revokes a refresh token at Cairn's own server (best effort). */
function revokeRefresh(rt, keepalive = false) {
  if (!config.own || !rt) return Promise.resolve();
  const body = new URLSearchParams({ token: rt, token_type_hint: 'refresh_token', client_id: config.client_id || 'cairn-editor' });
  return fetch('/oauth/revoke', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, keepalive }).catch(() => {});
}

/** Forgets the sign-in kept in this browser (the access and refresh tokens). */
function forget() {
  clearTimeout(refreshTimer);
  localStorage.removeItem(REFRESH);
  localStorage.removeItem(TOKEN);
}

/** Why the person was signed out, shown once on the sign-in card. */
let signOutNotice = null;

// -------------------------------------------------- one-time sign-in link --

/** A one-time sign-in link's `#/sign-in/<secret>`: the secret leaves the
 * address bar and the tab's history at once, is used up at
 * `POST /oauth/session` (which sets the session cookie), and the page then
 * signs in with code + PKCE as `cairn-editor`. Whom a link signs in is
 * known only once it is used: with a sign-in already here, the person is
 * asked before the link is used at all, and once more (by account, in
 * `oauthFinish`) before another account replaces theirs. Returns true when
 * it handled the route. */
async function takeSignInLink() {
  const m = location.hash.match(/^#\/sign-in\/([^/?&]+)/);
  if (!m) return false;
  history.replaceState(null, '', location.pathname + '#/');
  let secret = m[1];
  try { secret = decodeURIComponent(secret); } catch { /* sent as it came */ }
  if (!signedInHere()) {
    await useSignInLink(secret);
    return true;
  }
  const now = claimsOf(token() || '');
  askCard('link-confirm', 'Use this sign-in link?', [
    ['You are signed in as ', h('strong', {}, described(now)), '. This one-time link signs in the person it was made for, and works once.'],
    ['If it was made for another account, Cairn asks again before switching. ', unexpected()],
  ], ['link-stay', 'Stay as ' + ((now && (now.name || now.sub)) || 'yourself') + ', do not use the link', () => route()],
  ['link-use', 'Use the link', () => useSignInLink(secret)]);
  return true;
}

/** Uses up a one-time link's secret (the session cookie becomes its
 * person's), then signs in with code + PKCE. */
async function useSignInLink(secret) {
  main().replaceChildren(h('p', { class: 'muted' }, 'Signing in…'));
  let r;
  try {
    r = await fetch('/oauth/session', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link: secret }) });
  } catch {
    return linkRefused('Cairn did not answer. Check your connection, then open the sign-in link again.');
  }
  const b = await r.json().catch(() => ({}));
  if (!r.ok) {
    return linkRefused(b.error === 'invalid_link' || r.status === 400
      ? 'This sign-in link was used already or has expired. Ask your admin for a new one.'
      : 'Cairn could not use this sign-in link (' + (b.error_description || b.error || 'status ' + r.status) + '). Ask your admin for a new one.');
  }
  await oauthStart({ ...config, client_id: config.client_id || 'cairn-editor' }).catch((e) => linkRefused(e.message));
}

/** A link that did not sign in: said on the sign-in card, or, to a person
 * still signed in here, above the way back to their notes. */
function linkRefused(why) {
  if (!signedInHere()) return showSignIn(why);
  main().replaceChildren(h('section', { class: 'card' },
    h('h2', {}, 'Sign-in link not used'),
    h('p', { id: 'sign-in-why', class: 'banner warn' }, why),
    h('p', {}, 'You are still signed in as ', h('strong', {}, described(claimsOf(token() || ''))), '.'),
    h('button', { id: 'link-back', class: 'primary', onclick: () => route() }, 'Back to your notes')));
}

async function showSignIn(why) {
  const cfg = config;
  why = why || signOutNotice;
  signOutNotice = null;
  const input = h('textarea', { id: 'token-input', rows: 3, placeholder: 'Bearer token', autocomplete: 'off', 'aria-label': 'Sign-in token' });
  const start = () => oauthStart(cfg).catch((e) => status(e.message, true));
  let offer;
  if (cfg.own) {
    offer = [
      h('p', {}, 'People sign in to Cairn with a one-time sign-in link: the one ', h('code', {}, 'cairn up'), ' printed, or one an admin made for you. Open it in this browser.'),
      h('p', {}, 'Signed in in this browser before? ', h('button', { id: 'oauth-signin', class: 'primary', onclick: start }, 'Sign in')),
      h('p', { class: 'muted small' }, 'Operators can also paste a token minted by ', h('code', {}, 'cairn token'), ':'),
    ];
  } else if (cfg.client_id && cfg.authorization_server) {
    offer = h('p', {}, h('button', { id: 'oauth-signin', class: 'primary', onclick: start }, 'Sign in with ' + new URL(cfg.authorization_server).host));
  } else {
    offer = h('p', { class: 'muted' }, 'Open the sign-in link that cairn up prints, or paste a token.');
  }
  main().replaceChildren(
    h('section', { class: 'card' },
      h('h2', {}, 'Sign in'),
      why ? h('p', { id: 'sign-in-why', class: 'banner warn' }, why) : null,
      offer,
      input,
      h('div', { class: 'row' }, h('button', { id: 'token-signin', onclick: () => { dropRefresh(); localStorage.setItem(TOKEN, input.value.trim()); route(); } }, 'Use this token'))));
}

// ---------------------------------------------------------------- API ----

/** One call to the API: `{status, ok, body}`; a network failure is status 0 with a message. */
async function api(method, path, body, retried = false) {
  const used = token();
  const init = { method, headers: { authorization: 'Bearer ' + used } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let r;
  // A 429 did nothing: it is asked again after the Retry-After it names
  // (a few times, a few seconds at most), so a busy minute slows the page
  // down instead of leaving a pane empty.
  for (let attempt = 0; ; attempt++) {
    try {
      r = await fetch(path, init);
    } catch (e) {
      return { status: 0, ok: false, body: { error: 'unreachable', message: 'Cairn did not answer (' + e.message + ')' } };
    }
    const wait = Number(r.headers.get('retry-after'));
    if (r.status !== 429 || attempt >= 4 || !(wait >= 0 && wait <= 10)) break;
    await new Promise((done) => setTimeout(done, Math.max(wait, 0.2) * 1000));
  }
  const b = await r.json().catch(() => ({}));
  if (r.status === 401) {
    // An access token refused (expired early, or the clock is off): one
    // refresh, then the call once more.
    const refreshable = !!localStorage.getItem(REFRESH);
    if (!retried && refreshable && await refresh(used)) return api(method, path, body, true);
    // A refresh that failed on the way (no answer, busy) keeps the sign-in: the next call tries again.
    if (token() === used && !(refreshable && localStorage.getItem(REFRESH))) {
      forget();
      showSignIn('Your sign-in has expired or was refused. Your drafts are kept in this browser.');
    }
  }
  return { status: r.status, ok: r.ok, body: b };
}

/** A refusal in words: the message and what to do next. */
const refusalText = (b) => [b.message || b.error || 'refused', b.next_step].filter(Boolean).join(' — ');

/** A refusal for people: what happened and what to do, per code, with
 * names and local times (the server's message and next step are for agents). */
function plainRefusal(b) {
  const who = b.held_by ? `${b.held_by}${b.actor_type ? ' (' + b.actor_type + ')' : ''}` : 'Someone else';
  const until = b.expires_at ? ' until ' + clock(b.expires_at) : '';
  const words = {
    invalid_argument: 'Cairn did not accept this: ' + (b.field ? 'check the ' + b.field.replace(/_/g, ' ') + '.' : 'check what you entered.'),
    not_found: 'This is no longer there (deleted or moved). Go back to all notes.',
    too_large: 'This is too large to store. Make it shorter, or split it into another tab.',
    version_conflict: 'Someone changed this since you opened it. Reload to see their change, then try again.',
    content_hash_mismatch: 'Someone changed this since you opened it. Reload to see their change, then try again.',
    idempotency_key_reused: 'This was already sent with different content. Try again.',
    claim_conflict: `${who} is working on this${until}. Try again after they finish.`,
    outside_claim: 'You hold only a section of this tab: you can change only its lines. Release it to edit elsewhere.',
    forbidden: 'You are not allowed to do this here. Ask the note\'s owner.',
    busy: 'Cairn is busy right now. Wait a moment and try again.',
    too_complex: 'This is too complex for Cairn to handle in one go. Make a smaller change.',
    quota_exceeded: 'You have reached your storage or request limit. Wait a minute, or free up space.',
    unreachable: 'Cairn did not answer. Check your connection and try again.',
  };
  return words[b.error] || 'Cairn refused this. Try again, or reload the page.';
}

// ------------------------------------------------------------- drafts ----

function draftKey(note, tab) {
  const who = me();
  return ['cairn.draft', who.iss || '', who.tenant || '', who.sub || '', note, tab].join('|');
}
const loadDraft = (note, tab) => JSON.parse(localStorage.getItem(draftKey(note, tab)) || 'null');
const storeDraft = (note, tab, d) => localStorage.setItem(draftKey(note, tab), JSON.stringify({ ...d, saved_at: new Date().toISOString() }));
const dropDraft = (note, tab) => localStorage.removeItem(draftKey(note, tab));

/** The idempotency key for saving exactly this content: the same while the content is. */
function keyFor(note, tab, content) {
  const d = loadDraft(note, tab) || {};
  if (d.key && d.key_for === content) return d.key;
  const key = newKey();
  storeDraft(note, tab, { ...d, key, key_for: content });
  return key;
}

// --------------------------------------------------------------- route ---

/** What the open note page holds: timers and the person's own claims (of
 * the tab, of one section), undone on leaving. */
let page = { timers: [], claim: null, section: null, leave: [] };

function leave() {
  for (const t of page.timers) clearInterval(t);
  for (const f of page.leave) f();
  page = { timers: [], claim: null, section: null, leave: [] };
}

/** Counts routes, so a route that waited (on a refresh) knows when a newer one took over. */
let routeSeq = 0;

/** The header's signed-in parts: who, settings (Cairn's own server), sign out. */
function signedInChrome(on) {
  $('#sign-out').hidden = !on;
  $('#settings-link').hidden = !(on && config.own);
  if (!on) $('#who').textContent = '';
}

async function route() {
  leave();
  status('');
  delete main().dataset.loaded;
  const seq = ++routeSeq;
  if (await takeSignInLink()) return;
  const link = takeTokenFromFragment();
  if (link && link.refused) return linkRefused(link.refused);
  if (pendingLink) return showSwitchPrompt();
  let t = token();
  // An access token near its end (or one that cannot be read) is refreshed first, when there is a refresh token.
  if ((!t || dueForRefresh(t)) && localStorage.getItem(REFRESH)) {
    await refresh(t);
    if (seq !== routeSeq) return; // a newer route took over meanwhile
    t = token();
  }
  if (t && (!claimsOf(t) || expired(claimsOf(t)))) {
    forget();
    signedInChrome(false);
    return showSignIn('Your sign-in has expired or cannot be read. Sign in again; your drafts are kept in this browser.');
  }
  signedInChrome(!!t);
  const consent = location.hash.match(/^#\/consent\/([^/?&#]+)/);
  if (!t) {
    if (consent) return consentSignIn();
    return showSignIn();
  }
  scheduleRefresh();
  const who = me();
  $('#who').textContent = [who.name || who.sub, who.tenant && 'tenant ' + who.tenant].filter(Boolean).join(' · ');
  if (consent) return showConsent(consent[1]);
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'settings') return showSettings();
  if (parts[0] === 'n' && parts[1]) return openNote(parts[1], parts[2]);
  if (parts[0] === 'search' && parts[1]) return showSearch(parts[1], parts[2]);
  return showNotes(parts[0] === 'page' ? parts[1] : undefined);
}

// --------------------------------------------------------------- notes ---

/** The search box: a query goes to `#/search/<query>`. */
function searchBox(value) {
  const q = h('input', { id: 'search-q', type: 'search', 'aria-label': 'Search notes', placeholder: 'Search notes: words, "a phrase", prefix*', maxlength: 200, value: value || '' });
  const go = (e) => { e.preventDefault(); if (q.value.trim()) location.hash = '#/search/' + enc(q.value.trim()); };
  return h('form', { id: 'search', class: 'row', onsubmit: go }, q, h('button', { id: 'search-go', type: 'submit' }, 'Search'));
}

/** Hits of a query, a page at a time; every text in them is set as text. */
async function showSearch(query, cursor) {
  const r = await api('GET', '/api/v1/search?q=' + enc(query) + '&limit=20' + (cursor ? '&cursor=' + enc(cursor) : ''));
  if (!r.ok) return main().replaceChildren(searchBox(query), h('p', { id: 'search-refused', class: 'banner bad' }, refusalText(r.body)), h('a', { href: '#/' }, 'All notes'));
  // replaceChildren would show a null as the text "null": an empty list's line is an empty string instead.
  main().replaceChildren(
    searchBox(query),
    h('h2', {}, 'Search'),
    r.body.hits.length ? '' : h('p', { id: 'no-hits', class: 'muted' }, 'Nothing found.'),
    h('ul', { id: 'hits', class: 'note-list' },
      r.body.hits.map((hit) => h('li', { 'data-note-id': hit.note_id, 'data-tab-id': hit.tab_id },
        h('a', { href: '#/n/' + enc(hit.note_id) + '/' + enc(hit.tab_id) }, hit.note_title, ' · ', hit.label),
        h('span', { class: 'muted' }, hit.field),
        h('span', { class: 'snippet' }, hit.snippet),
        h('span', { class: 'muted' }, 'v' + hit.version + ' · updated ' + when(hit.provenance.updated_at) + ' by ' + byName(hit.provenance.updated_by))))),
    h('div', { class: 'row' },
      r.body.next_cursor ? h('a', { id: 'more-hits', href: '#/search/' + enc(query) + '/' + enc(r.body.next_cursor) }, 'More results') : null,
      h('a', { href: '#/' }, 'All notes')));
  main().dataset.loaded = 'search:' + query;
}

async function showNotes(cursor) {
  const r = await api('GET', '/api/v1/notes?limit=20' + (cursor ? '&cursor=' + enc(cursor) : ''));
  if (!r.ok) return main().replaceChildren(h('p', { class: 'banner bad' }, plainRefusal(r.body)));
  const title = h('input', { id: 'new-note-title', placeholder: 'Title of a new note', 'aria-label': 'Title of a new note', maxlength: 200 });
  const approved = h('input', { id: 'new-note-approved', type: 'checkbox' });
  const create = async () => {
    const c = await api('POST', '/api/v1/notes', { title: title.value, approved_for_agents: approved.checked });
    if (!c.ok) return status(plainRefusal(c.body), true);
    location.hash = '#/n/' + enc(c.body.note_id);
  };
  main().replaceChildren(
    searchBox(),
    h('h2', {}, 'Notes'),
    h('div', { class: 'row' }, title, h('label', {}, approved, ' approved for agents'), h('button', { id: 'create-note', class: 'primary', onclick: create }, 'Create')),
    r.body.notes.length ? '' : h('p', { class: 'muted' }, 'No notes yet: give a new note a title and press Create.'),
    h('ul', { id: 'note-list', class: 'note-list' },
      r.body.notes.map((n) => h('li', {},
        h('a', { href: '#/n/' + enc(n.note_id), 'data-note-id': n.note_id }, n.title),
        h('span', { class: 'muted' }, 'v' + n.version),
        h('span', { class: 'muted' }, n.approved_for_agents ? 'agents may read' : 'people only'),
        h('span', { class: 'muted' }, 'updated ' + when(n.provenance.updated_at) + ' by ' + byName(n.provenance.updated_by))))),
    h('div', { class: 'row' },
      cursor ? h('a', { href: '#/' }, 'First page') : null,
      r.body.next_cursor ? h('a', { id: 'more-notes', href: '#/page/' + enc(r.body.next_cursor) }, 'Next page') : null));
  main().dataset.loaded = 'notes:' + (cursor ? 'later' : 'first');
}

// ---------------------------------------------------------------- note ---

const KIND = { markdown: 'markdown', slides: 'slides', sheet: 'sheet', files: 'files', sources: 'sources' };

async function openNote(noteId, tabId) {
  const r = await api('GET', '/api/v1/notes/' + enc(noteId));
  if (!r.ok) return main().replaceChildren(h('p', { class: 'banner bad' }, plainRefusal(r.body)), h('a', { href: '#/' }, 'All notes'));
  const note = r.body;
  const tab = note.tabs.find((t) => t.tab_id === tabId) || note.tabs[0];
  const ctx = { note, tab, noteId: note.note_id, tabId: tab.tab_id };
  const body = h('div', { id: 'tab-body' });
  const side = h('aside', {}, presencePanel(ctx), tab.type === 'markdown' ? outlinePanel(ctx) : null, historyPanel(ctx));
  main().replaceChildren(
    noteHeader(ctx),
    tabStrip(ctx),
    h('div', { class: 'layout' }, body, side));
  const open = { markdown: markdownEditor, slides: slidesEditor, sheet: sheetEditor, files: filesView, sources: sourcesView }[tab.type];
  try {
    await open(ctx, body);
  } catch (e) {
    body.replaceChildren(h('p', { class: 'banner bad' }, 'This tab could not be opened: ' + e.message));
  }
  main().dataset.loaded = tab.tab_id;
  // Leaving the page (another route, a closed tab) releases the person's claim.
  const onHide = () => releaseMine(true);
  window.addEventListener('pagehide', onHide);
  page.leave.push(() => window.removeEventListener('pagehide', onHide), () => releaseMine(true));
}

/** Re-read the note's version (after a write of ours) without leaving the tab. */
async function refreshNote(ctx) {
  const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId));
  if (!r.ok) return;
  ctx.note = r.body;
  const v = $('#note-version');
  if (v) v.textContent = 'version ' + ctx.note.version;
  ctx.refreshHistory?.();
  ctx.refreshOutline?.();
}

function noteHeader(ctx) {
  const n = ctx.note;
  const approve = h('input', { id: 'approve-toggle', type: 'checkbox', checked: n.approved_for_agents,
    onchange: async (e) => {
      const r = await api('PATCH', '/api/v1/notes/' + enc(ctx.noteId), { expected_version: ctx.note.version, approved_for_agents: e.target.checked, idempotency_key: newKey() });
      if (!r.ok) { e.target.checked = !e.target.checked; return status(plainRefusal(r.body), true); }
      status(e.target.checked ? 'Agents may now read this note.' : 'This note is withdrawn from agents.');
      refreshNote(ctx);
    } });
  const title = h('h2', { id: 'note-title' }, n.title);
  const renameBtn = h('button', { id: 'rename-note' }, 'Rename note');
  // Inline rename: Enter (or Save) sends it, Escape puts the title back.
  renameBtn.addEventListener('click', () => {
    const was = title.textContent;
    const input = h('input', { id: 'note-title-input', value: was, maxlength: 200, 'aria-label': 'Title of the note' });
    const done = () => { title.replaceChildren(was); renameBtn.hidden = false; renameBtn.focus(); };
    const send = async () => {
      const want = input.value.trim();
      if (!want || want === was) return done();
      // The note's version as it is now: an agent's edit of a tab does not stop a rename.
      const head = await api('GET', '/api/v1/notes/' + enc(ctx.noteId));
      const r = head.ok ? await api('PATCH', '/api/v1/notes/' + enc(ctx.noteId), { expected_version: head.body.version, title: want, idempotency_key: newKey() }) : head;
      if (!r.ok) return status('Not renamed. ' + plainRefusal(r.body), true);
      ctx.note.title = want;
      title.replaceChildren(want);
      renameBtn.hidden = false;
      status('Renamed to “' + want + '”.');
      refreshNote(ctx);
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); send(); }
      if (e.key === 'Escape') { e.preventDefault(); done(); }
    });
    title.replaceChildren(input, h('button', { id: 'rename-note-save', class: 'primary', onclick: send }, 'Save title'),
      h('button', { id: 'rename-note-cancel', onclick: done }, 'Cancel'));
    renameBtn.hidden = true;
    input.focus();
    input.select();
  });
  return h('div', {},
    h('div', { class: 'row' }, h('a', { href: '#/' }, '← All notes')),
    title,
    h('div', { class: 'row muted' },
      h('span', { id: 'note-version' }, 'version ' + n.version),
      h('span', {}, 'by ' + byName(n.provenance.author)),
      h('label', {}, approve, ' approved for agents'),
      renameBtn));
}

function tabStrip(ctx) {
  const tabs = ctx.note.tabs;
  const strip = h('nav', { id: 'tabs', class: 'tabs', role: 'tablist' },
    tabs.map((t) => h('button', { class: 'tab', role: 'tab', 'data-tab-id': t.tab_id, 'data-kind': t.type, 'aria-selected': String(t.tab_id === ctx.tabId),
      onclick: () => { location.hash = '#/n/' + enc(ctx.noteId) + '/' + enc(t.tab_id); } }, t.label, h('span', { class: 'kind' }, KIND[t.type] || t.type))));
  const kind = h('select', { id: 'new-tab-kind', 'aria-label': 'Kind of the new tab' }, h('option', { value: 'slides' }, 'slides'), h('option', { value: 'sheet' }, 'sheet'));
  const label = h('input', { id: 'new-tab-label', placeholder: 'New tab label', 'aria-label': 'Label of the new tab', maxlength: 100 });
  const tools = h('div', { class: 'row' }, kind, label, h('button', { id: 'create-tab', onclick: async () => {
    const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs', { tab_type: kind.value, label: label.value, expected_version: ctx.note.version, idempotency_key: newKey() });
    if (!r.ok) return status(plainRefusal(r.body), true);
    location.hash = '#/n/' + enc(ctx.noteId) + '/' + enc(r.body.tab_id);
  } }, 'Add tab'));
  const movable = ctx.tab.type === 'slides' || ctx.tab.type === 'sheet';
  const idx = tabs.findIndex((t) => t.tab_id === ctx.tabId);
  const patch = async (change) => {
    const r = await api('PATCH', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId), { expected_version: ctx.note.version, idempotency_key: newKey(), ...change });
    if (!r.ok) return status(plainRefusal(r.body), true);
    route();
  };
  tools.append(
    h('button', { id: 'move-left', disabled: idx === 0, onclick: () => patch({ position: idx - 1 }) }, '← Move'),
    h('button', { id: 'move-right', disabled: idx === tabs.length - 1, onclick: () => patch({ position: idx + 1 }) }, 'Move →'));
  if (movable) {
    const rename = h('input', { id: 'rename-label', value: ctx.tab.label, maxlength: 100 });
    tools.append(rename, h('button', { id: 'rename-tab', onclick: () => patch({ label: rename.value }) }, 'Rename'),
      h('button', { id: 'delete-tab', onclick: async () => {
        if (!confirm('Delete the tab "' + ctx.tab.label + '"? It stays in the history and can be restored.')) return;
        const r = await api('DELETE', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId), { expected_version: ctx.note.version, idempotency_key: newKey() });
        if (!r.ok) return status(plainRefusal(r.body), true);
        location.hash = '#/n/' + enc(ctx.noteId);
      } }, 'Delete tab'));
  }
  return h('div', {}, strip, tools);
}

// ------------------------------------------------------ presence, claims -

/** Another actor's live claim on this tab or the whole note, if any. A
 * claim on a section of the tab does not lock the editor: the server refuses
 * only a save that changes that section's lines. */
function blockingClaim(ctx) {
  return (ctx.claims || []).find((c) => !c.yours && c.section_id == null && (c.tab_id == null || c.tab_id === ctx.tabId));
}

/** What a claim on the board holds, in words. */
function claimTarget(ctx, c) {
  if (!c.tab_id) return 'whole note';
  const tab = 'tab ' + (c.tab_label || c.tab_id);
  if (c.section_id == null) return tab;
  return 'section ' + (c.tab_id === ctx.tabId ? sectionName(ctx, c.section_id) : '“' + c.section_id + '”') + ' of ' + tab;
}

function presencePanel(ctx) {
  const list = h('ul', { id: 'presence', class: 'claims' });
  const mine = h('button', { id: 'claim-toggle' }, 'Claim this tab while I edit');
  const panel = h('section', { class: 'panel' }, h('h3', {}, 'Who is here'), list, h('div', { class: 'row' }, mine));
  const draw = () => {
    const claims = ctx.claims || [];
    list.replaceChildren(...(claims.length ? claims.map((c) => h('li', { class: 'claim', 'data-claim-id': c.claim_id, 'data-actor': c.actor_type, 'data-section-id': c.section_id },
      h('strong', {}, c.held_by), ' (' + c.actor_type + ')' + (c.yours ? ' — you' : ''),
      h('div', { class: 'muted' }, claimTarget(ctx, c) + ' · since ' + when(c.since) + ' · until ' + when(c.expires_at)),
      (c.notes || []).map((n) => h('div', { class: 'claim-notes' }, '“', n.text, '” ', h('span', {}, when(n.posted_at))))))
      : [h('li', { class: 'muted' }, 'Nobody holds this note.')]));
    mine.textContent = page.claim ? 'Release my claim' : 'Claim this tab while I edit';
    ctx.onClaims?.();
  };
  // The note is followed on the `events` stream while the page is in view:
  // an event each time what `changes` shows moves (the board, the title,
  // each tab's version), within a quarter second. When the stream cannot be
  // had (the person's stream leases are all held, by other tabs or agents)
  // or while the page is hidden, one cheap read of `changes` a second (every
  // 10 s in a background tab) does the same.
  let etag = null;
  let seen = {};
  let idle = 0;
  const apply = async (body) => {
    if (!body.changed) return;
    etag = body.etag;
    const tab = (body.tabs || []).find((t) => t.tab_id === ctx.tabId);
    const board = JSON.stringify(body.claims || []);
    // The outline is read again only when the tab's text or the claims moved (a rename or an approval moves neither).
    const moved = board !== seen.board || (tab && tab.tab_version !== seen.tab);
    seen = { board, tab: tab?.tab_version };
    ctx.claims = body.claims || [];
    if (body.version !== ctx.note.version) {
      ctx.note.version = body.version;
      const v = $('#note-version');
      if (v) v.textContent = 'version ' + body.version;
      ctx.refreshHistory?.();
    }
    const title = $('#note-title');
    if (title && body.title != null && !title.querySelector('input')) title.textContent = body.title;
    // The outline shows who holds which section: it is read again with the
    // board, and first, so that the board names sections by their headings.
    if (moved) await ctx.refreshOutline?.();
    draw();
    ctx.onRemoteChange?.(tab);
  };
  const poll = async (e) => {
    if (e === 'timer' && live.following) return;
    // A page in a background tab asks every 10 seconds only: the person's request budget is shared by all their tabs.
    if (e === 'timer' && document.hidden && ++idle % 10) return;
    const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/changes' + (etag ? '?since=' + enc(etag) : ''));
    if (r.ok) await apply(r.body);
  };
  const live = followNote(ctx.noteId, () => etag, apply);
  page.leave.push(live.stop);
  mine.addEventListener('click', async () => {
    if (page.claim) {
      const id = page.claim;
      page.claim = null;
      await releaseClaim(id, false);
      return poll();
    }
    const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/claims', { tab_id: ctx.tabId, ttl_seconds: CLAIM_TTL });
    if (!r.ok) return status('Not claimed. ' + plainRefusal(r.body), true);
    page.claim = r.body.claim_id;
    heartbeat(page.claim, () => page.claim, (b) => { page.claim = null; status('Your claim lapsed. ' + plainRefusal(b), true); });
    poll();
  });
  ctx.pollClaims = poll;
  poll();
  page.timers.push(setInterval(() => poll('timer'), PRESENCE_MS));
  return panel;
}

/** Follows note `noteId`'s `events` stream while the page is in view,
 * calling `apply` with each `changes` answer; reopened when it ends (from
 * `since()`, the last etag), given up for STREAM_RETRY_MS when refused or
 * broken. `following` says whether a stream is open now (polling stands in
 * while it is not); `stop` closes it for good. */
function followNote(noteId, since, apply) {
  const live = { following: false, stopped: false, abort: null };
  live.stop = () => { live.stopped = true; live.abort?.abort(); };
  const run = async () => {
    while (!live.stopped) {
      if (document.hidden) { await sleep(1000); continue; }
      live.abort = new AbortController();
      const path = '/api/v1/notes/' + enc(noteId) + '/events' + (since() ? '?since=' + enc(since()) : '');
      let ended = 'broken';
      try {
        const r = await fetch(path, { headers: { authorization: 'Bearer ' + token(), accept: 'text/event-stream' }, signal: live.abort.signal });
        if (r.ok && r.body) {
          live.following = true;
          ended = await readEvents(r.body, apply, () => document.hidden) ? 'hidden' : 'ended';
        } else {
          await r.body?.cancel();
        }
      } catch (e) { /* closed by stop(), or the network: polling stands in */ }
      live.following = false;
      if (ended === 'broken' && !live.stopped) await sleep(STREAM_RETRY_MS);
    }
  };
  run();
  return live;
}

/** Reads Server-Sent Events from `body`, calling `apply` with each
 * `changes` event's answer, until the stream ends, a `refused` or
 * `unavailable` event comes, or `stop()` turns true (then: true). */
async function readEvents(body, apply, stop) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    for (;;) {
      if (stop()) return true;
      const { value, done } = await reader.read();
      if (done) return false;
      text += value;
      let end;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const lines = text.slice(0, end).split('\n');
        text = text.slice(end + 2);
        const name = lines.find((l) => l.startsWith('event: '))?.slice(7);
        const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
        if (name === 'changes' && data) await apply(JSON.parse(data));
        else if (name) return false;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** Renews claim `id` every HEARTBEAT_MS while the page still holds it
 * (`held()` is `id`); a refused renewal stops it and is told (`lapsed`). */
function heartbeat(id, held, lapsed) {
  const beat = setInterval(async () => {
    if (held() !== id) return clearInterval(beat);
    const b = await api('POST', '/api/v1/claims/' + enc(id) + '/renew', { ttl_seconds: CLAIM_TTL });
    if (!b.ok && held() === id) { clearInterval(beat); lapsed(b.body); }
  }, HEARTBEAT_MS);
  page.timers.push(beat);
}

/** Release one claim the person holds; on leaving the page the request outlives it (keepalive). */
async function releaseClaim(id, leaving) {
  const init = { method: 'DELETE', headers: { authorization: 'Bearer ' + token() }, keepalive: leaving };
  await fetch('/api/v1/claims/' + enc(id), init).catch(() => {});
}

/** Release the person's claims on the open note: the tab's and the section's. */
async function releaseMine(leaving) {
  const ids = [page.claim, page.section].filter(Boolean);
  page.claim = null;
  page.section = null;
  await Promise.all(ids.map((id) => releaseClaim(id, leaving)));
}

// ------------------------------------------------------------- outline ---

/** The most outline reads (of 500 sections each) the panel makes. */
const OUTLINE_PAGES = 4;

/** Section `id`'s heading as the outline last read has it, quoted (its id when the outline does not have it). */
function sectionName(ctx, id) {
  const s = (ctx.sections || []).find((x) => x.section_id === id);
  return '“' + (s ? s.heading || '(no heading text)' : id) + '”';
}

/** Who holds a section and until when, in words: “Drafting agent (agent) until 14:05”. */
const holderWords = (c) => `${c.held_by} (${c.actor_type}) until ${clock(c.expires_at)}`;

/** A refused section claim in words: who is working there and until when. */
function claimRefusal(ctx, b, s) {
  const wanted = 'the section “' + (s.heading || '(no heading text)') + '”';
  if (b.error !== 'claim_conflict') return `Could not claim ${wanted}. ${plainRefusal(b)}`;
  const what = b.section_id ? 'the section ' + sectionName(ctx, b.section_id) : b.tab_id ? 'this tab' : 'this note';
  if (b.held_by_you) return `You already hold ${what}: release it before you claim ${wanted}.`;
  return `${b.held_by} (${b.actor_type}) is working on ${what} until ${clock(b.expires_at)}: you can claim ${wanted} after they finish.`;
}

/** A markdown tab's sections: each heading (a click shows it in the editor),
 * who holds it, and a button to claim it or release it. */
function outlinePanel(ctx) {
  const list = h('ul', { id: 'outline', class: 'outline' });
  const msg = h('div', { id: 'outline-status', class: 'muted', role: 'status' });
  const panel = h('section', { class: 'panel', id: 'outline-panel' }, h('h3', {}, 'Sections of this tab'), list, msg);
  const say = (text, bad = false) => { msg.textContent = text || ''; msg.className = bad ? 'bad' : 'muted'; };
  const yours = (c) => !!c && (c.claim_id === page.section || (ctx.claims || []).some((b) => b.claim_id === c.claim_id && b.yours));
  let drawn = null;
  let reads = 0;
  const draw = () => {
    const sections = ctx.sections || [];
    const tabHeld = blockingClaim(ctx);
    const ownTab = (ctx.claims || []).some((c) => c.yours && c.section_id == null && (c.tab_id == null || c.tab_id === ctx.tabId));
    const held = sections.find((s) => yours(s.claimed_by));
    // Drawn again only when something shown changed: a button is never swapped under the pointer.
    const key = JSON.stringify([sections, tabHeld?.claim_id, ownTab, held?.section_id, ctx.sectionsCut]);
    if (key === drawn) return;
    drawn = key;
    const others = sections.filter((o) => o.claimed_by && !yours(o.claimed_by));
    const row = (s) => {
      const c = s.claimed_by;
      const mine = yours(c);
      const overlaps = !c && others.some((o) => o.start_line <= s.end_line && s.start_line <= o.end_line);
      const free = !c && !overlaps && !tabHeld && !ownTab && !held;
      return h('li', { class: 'section lvl-' + s.level + (c ? ' held' : ''), 'data-section-id': s.section_id, 'data-level': s.level },
        h('button', { class: 'section-heading', title: `Show lines ${s.start_line}–${s.end_line} in the editor`, onclick: () => showSection(ctx, s) }, s.heading || '(no heading text)'),
        c ? h('span', { class: 'section-holder' + (mine ? ' mine' : ''), 'data-actor': c.actor_type },
          mine ? `held by you until ${clock(c.expires_at)}` : 'held by ' + holderWords(c)) : null,
        overlaps ? h('span', { class: 'section-holder overlap' }, 'overlaps a held section') : null,
        mine ? h('button', { class: 'release-section', onclick: () => release(c.claim_id) }, 'Release') : null,
        free ? h('button', { class: 'claim-section', onclick: () => claim(s) }, 'Claim') : null);
    };
    list.replaceChildren(...(sections.length ? sections.map(row) : [h('li', { class: 'muted' }, 'No headings yet: a line starting with # starts a section.')]),
      ...(ctx.sectionsCut ? [h('li', { class: 'muted' }, `Only the first ${sections.length} sections are listed.`)] : []));
  };
  const load = async () => {
    const read = ++reads;
    const sections = [];
    let cut = false;
    for (let n = 0, from = 1; ; n++) {
      const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/outline' + (from > 1 ? '?start_line=' + from : ''));
      if (read !== reads) return; // a later read answers instead
      if (!r.ok) { drawn = null; list.replaceChildren(h('li', { class: 'muted' }, 'The outline is unavailable. ' + plainRefusal(r.body))); return; }
      sections.push(...r.body.sections);
      if (!r.body.truncated) break;
      if (n + 1 >= OUTLINE_PAGES) { cut = true; break; }
      from = r.body.next;
    }
    ctx.sections = sections;
    ctx.sectionsCut = cut;
    draw();
  };
  const claim = async (s) => {
    say('');
    const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/claims', { tab_id: ctx.tabId, section_id: s.section_id, ttl_seconds: CLAIM_TTL });
    if (!r.ok) {
      say(claimRefusal(ctx, r.body, s), true);
    } else {
      page.section = r.body.claim_id;
      heartbeat(page.section, () => page.section, (b) => {
        page.section = null;
        say(`Your claim on the section “${s.heading}” lapsed. ${plainRefusal(b)}`, true);
        load();
      });
      say(`You hold the section “${s.heading}” until ${clock(r.body.expires_at)} (renewed while this page is open): others cannot change its lines, and you can change only them.`);
    }
    await (ctx.pollClaims || load)();
  };
  const release = async (id) => {
    if (page.section === id) page.section = null;
    await releaseClaim(id, false);
    say('');
    await (ctx.pollClaims || load)();
  };
  ctx.refreshOutline = load;
  load();
  return panel;
}

/** Selects section `s` in the editor, the caret on its heading, and scrolls
 * there. The outline reads the stored text: when the person's draft moved
 * the heading, the nearest line with that heading is taken. */
function showSection(ctx, s) {
  const editor = ctx.editor;
  if (!editor || editor.closest('[hidden]')) return;
  const lines = editor.value.split('\n');
  const looks = (i) => {
    const l = (lines[i] || '').trimStart();
    return l.startsWith('#'.repeat(s.level)) && l[s.level] !== '#' && l.includes(s.heading);
  };
  let first = s.start_line - 1;
  if (!looks(first)) {
    const near = lines.map((_, i) => i).filter(looks).sort((a, b) => Math.abs(a - first) - Math.abs(b - first))[0];
    if (near != null) first = near;
  }
  first = Math.max(0, Math.min(first, lines.length - 1));
  const last = Math.min(first + s.end_line - s.start_line, lines.length - 1);
  const at = (i) => lines.slice(0, i).reduce((n, l) => n + l.length + 1, 0);
  const start = at(first);
  editor.focus({ preventScroll: true });
  editor.setSelectionRange(start, Math.min(at(last + 1), editor.value.length), 'backward');
  editor.scrollTop = textTop(editor, start);
}

/** How far down `editor`'s content the character at `offset` starts, wrapped
 * as the editor wraps it: the text before it, measured in a hidden twin. */
function textTop(editor, offset) {
  const twin = h('textarea', { class: editor.className, 'aria-hidden': 'true', tabindex: -1 });
  Object.assign(twin.style, { position: 'absolute', visibility: 'hidden', height: '0', minHeight: '0', width: editor.offsetWidth + 'px' });
  twin.value = editor.value.slice(0, offset);
  editor.after(twin);
  const css = getComputedStyle(twin);
  const top = twin.scrollHeight - parseFloat(css.lineHeight) - parseFloat(css.paddingBottom) - parseFloat(css.paddingTop);
  twin.remove();
  return Math.max(0, top) || 0;
}

// ------------------------------------------------------------- history ---

/** What a history entry did, in words. */
const ACTIONS = {
  replace_text: 'Edited', append_text: 'Appended', replace_section: 'Section replaced', restore: 'Restored',
  create_note: 'Created', create_tab: 'Tab added', delete_tab: 'Tab deleted', update_tab: 'Tab renamed or moved',
  update_note: 'Renamed or approval for agents changed', sheet_set_range: 'Cells changed', add_source: 'Source added', attach_file: 'File attached',
};
const actionWords = (a) => ACTIONS[a] || (a ? a.charAt(0).toUpperCase() + a.slice(1).replace(/_/g, ' ') : 'Changed');

function historyPanel(ctx) {
  const list = h('ul', { id: 'history', class: 'history' });
  // Versions and diffs open wide, over the page (Escape or Close shuts it).
  const view = h('dialog', { id: 'history-view', class: 'wide', 'aria-labelledby': 'history-view-title' });
  view.addEventListener('click', (e) => { if (e.target === view) view.close(); });
  const load = async () => {
    // The note's history, this tab's versions and the note's own (created, renamed, approved): version 1 included.
    const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/history?limit=50');
    if (!r.ok) return list.replaceChildren(h('li', { class: 'muted' }, plainRefusal(r.body)));
    const entries = r.body.entries.filter((e) => e.tab_id == null || e.tab_id === ctx.tabId);
    if (!entries.length) return list.replaceChildren(h('li', { class: 'muted', id: 'no-history' }, 'No versions of this tab yet: saving it makes the first one.'));
    list.replaceChildren(...entries.map((e) => h('li', { class: 'version', 'data-version': e.version, 'data-action': e.action },
      h('strong', {}, 'v' + e.version), ' ' + actionWords(e.action) + ' by ', e.by.name, ' (' + e.by.actor_type + ')',
      h('div', { class: 'muted' }, when(e.at) + (e.size_bytes != null ? ' · ' + e.size_bytes + ' bytes' : '')),
      e.tab_id ? h('div', { class: 'row' },
        h('button', { class: 'view-version', onclick: () => showVersion(ctx, view, e.version) }, 'View'),
        h('button', { class: 'diff-version', onclick: () => showDiff(ctx, view, e.version) }, 'Diff to now'),
        h('button', { class: 'restore-version', onclick: () => restore(ctx, view, e.version) }, 'Restore')) : null)));
  };
  ctx.refreshHistory = load;
  load();
  return h('section', { class: 'panel' }, h('h3', {}, 'History of this tab'), list, view);
}

async function showVersion(ctx, view, v) {
  const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/versions/' + v);
  if (!r.ok) return openView(view, 'Version ' + v + ' unavailable', h('p', { class: 'banner bad' }, plainRefusal(r.body)));
  const b = r.body;
  const shown = h('div', { class: 'preview', id: 'version-content' });
  if (b.text != null) renderMarkdown(shown, b.text);
  else shown.append(h('pre', {}, JSON.stringify(b.slides || b.sheets || b, null, 2)));
  openView(view, 'As of version ' + v + ' (by ' + byName(b.provenance.updated_by) + ', ' + when(b.provenance.updated_at) + ')', shown);
}

/** Shows `content` under `title` in the wide history dialog. */
function openView(view, title, content) {
  view.replaceChildren(
    h('div', { class: 'row dialog-head' }, h('h3', { id: 'history-view-title' }, title),
      h('button', { id: 'history-view-close', onclick: () => view.close() }, 'Close')),
    content);
  if (!view.open) view.showModal();
  $('#history-view-close').focus();
}

async function showDiff(ctx, view, v) {
  const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/diff?from=' + v);
  if (!r.ok) return openView(view, 'Diff unavailable', h('p', { class: 'banner bad' }, plainRefusal(r.body)));
  const pre = h('pre', { class: 'diff', id: 'diff-view', tabindex: 0 });
  for (const hunk of r.body.hunks) {
    pre.append(h('span', { class: 'muted' }, `@@ -${hunk.old_start},${hunk.old_lines} +${hunk.new_start},${hunk.new_lines} @@\n`));
    for (const l of hunk.lines) pre.append(h('span', { class: l.op === 'insert' ? 'ins' : l.op === 'delete' ? 'del' : '' }, (l.op === 'insert' ? '+ ' : l.op === 'delete' ? '- ' : '  ') + l.text + '\n'));
  }
  if (!r.body.hunks.length) pre.append('No change between version ' + r.body.from + ' and ' + r.body.to + '.');
  openView(view, 'Changes from version ' + r.body.from + ' to ' + r.body.to, pre);
}

/** Whether the person has an unsaved draft of the open tab in this browser (markdown, slides or cells). */
function hasDraft(ctx) {
  const d = loadDraft(ctx.noteId, ctx.tabId);
  return !!d && (d.text != null || d.slides != null || d.cells != null);
}

/** Restores version `v` of the open tab. Over an unsaved draft, the person
 * is asked first: keep editing (nothing restored), restore and keep the
 * draft (still on the version it started from, so its save is stale and
 * meets the restored text: the merge, for markdown), or restore and discard
 * it. A draft is never dropped without that answer. */
function restore(ctx, view, v) {
  if (!hasDraft(ctx)) return restoreNow(ctx, v, false);
  const choose = (f) => () => { view.close(); f(); };
  openView(view, 'Restore version ' + v + ' over your draft?', h('div', { id: 'restore-ask' },
    h('p', {}, 'You have an unsaved draft of this tab, kept in this browser. Restoring saves version ' + v + ' as the tab\'s text.'),
    h('p', {}, 'Keep your draft, and saving it later shows it against the restored text (for markdown, as a merge); or discard it.'),
    h('div', { class: 'row' },
      h('button', { id: 'restore-cancel', class: 'primary', onclick: choose(() => {}) }, 'Do not restore'),
      h('button', { id: 'restore-keep', onclick: choose(() => restoreNow(ctx, v, true)) }, 'Restore and keep my draft'),
      h('button', { id: 'restore-discard', onclick: choose(() => restoreNow(ctx, v, false)) }, 'Restore and discard my draft'))));
  $('#restore-cancel').focus();
}

async function restoreNow(ctx, v, keepDraft) {
  // The note's version as it is now: someone may have written since the page read it.
  const head = await api('GET', '/api/v1/notes/' + enc(ctx.noteId));
  if (!head.ok) return status(plainRefusal(head.body), true);
  const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/restore', { from_version: v, expected_version: head.body.version, idempotency_key: newKey() });
  if (!r.ok) return status('Not restored. ' + plainRefusal(r.body), true);
  // Discarding was the person's choice; a kept draft stays on the version it started from.
  if (!keepDraft) dropDraft(ctx.noteId, ctx.tabId);
  await route();
  status('Restored the tab as it was at version ' + v + ' (saved as version ' + r.body.version + ').'
    + (keepDraft ? ' Your draft is kept, on the version it started from: saving it shows it against the restored text.' : ''));
}

// ------------------------------------------------------- save feedback ---

function saveBar(ctx) {
  const save = h('button', { id: 'save', class: 'primary' }, 'Save');
  const state = h('span', { id: 'save-status', class: 'muted' });
  const holder = h('div', { id: 'holder-banner', class: 'banner warn', hidden: true });
  ctx.onClaims = () => {
    const c = blockingClaim(ctx);
    holder.hidden = !c;
    // The server decides (the claim may lapse any moment); the page says what to expect.
    save.textContent = c ? 'Try to save' : 'Save';
    if (c) holder.textContent = `${c.held_by} (${c.actor_type}) holds ${c.tab_id ? 'this tab' : 'this note'} until ${when(c.expires_at)}: a save is refused until they release it. Your draft is kept in this browser.`;
  };
  return { save, state, holder, bar: h('div', { class: 'row' }, save, state) };
}

/** A refused save in words, the draft named as kept. A section someone
 * else holds, or the person's own section they wrote outside of, is named by
 * its heading (`ctx.sections`, the outline the page last read). */
function refusedSave(bar, b, ctx) {
  bar.state.className = 'bad';
  if (b.error === 'claim_conflict' && b.section_id) {
    bar.state.textContent = `Not saved. ${b.held_by} (${b.actor_type}) is working on the section ${sectionName(ctx || {}, b.section_id)} until ${clock(b.expires_at)}. `
      + 'Your text is kept here; save again after they finish, or undo your change in that section.';
    return;
  }
  if (b.error === 'outside_claim') {
    bar.state.textContent = `Not saved. You hold the section ${sectionName(ctx || {}, b.section_id)}: you can change only its lines while you hold it. Release it to edit elsewhere.`;
    return;
  }
  bar.state.textContent = 'Not saved. ' + plainRefusal(b) + ' Your draft is kept.';
}

// ----------------------------------------------------- markdown editor ---

async function readTab(ctx) {
  const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId));
  if (!r.ok) throw new Error(plainRefusal(r.body));
  return r.body;
}

async function markdownEditor(ctx, body) {
  const tab = await readTab(ctx);
  const editor = h('textarea', { id: 'editor', class: 'editor', spellcheck: 'true', 'aria-label': 'Text of the tab (markdown)', 'aria-describedby': 'editor-keys',
    placeholder: 'This tab is empty: write here in markdown (# starts a section), then Save (Ctrl+S).' });
  const preview = h('div', { id: 'preview', class: 'preview', role: 'region', 'aria-label': 'Preview', tabindex: 0 });
  ctx.editor = editor;
  const bar = saveBar(ctx);
  const draftBanner = h('div', { id: 'draft-banner', class: 'banner info', hidden: true });
  const remoteBanner = h('div', { id: 'remote-banner', class: 'banner warn', role: 'status', hidden: true });
  const discard = h('button', { id: 'discard-draft', hidden: true }, 'Discard draft');
  bar.bar.append(discard);
  const keys = h('p', { id: 'editor-keys', class: 'muted small' }, 'Tab indents, Shift+Tab outdents; press Escape, then Tab, to leave the editor. Ctrl+S saves.');
  const area = h('div', { id: 'edit-area' }, bar.holder, draftBanner, remoteBanner, h('div', { class: 'split' }, editor, preview), keys, bar.bar);
  body.replaceChildren(area);
  // `base`: what the draft started from: the note's version (for the merge),
  // the tab's version (for the save) and its text (a draft equal to it is no draft).
  const fresh = (t) => ({ version: t.version, tab_version: t.tab_version, text: t.text });
  let base = fresh(tab);
  let saving = false;
  const d = loadDraft(ctx.noteId, ctx.tabId);
  // A draft kept by an earlier page does not know its base text: it is read at the draft's version.
  if (d && d.text != null && d.base_text == null && d.base_version != null && d.base_version !== tab.version) {
    const then = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/versions/' + d.base_version);
    if (then.ok && typeof then.body.text === 'string') d.base_text = then.body.text;
  }
  const unchanged = (x) => x.text === tab.text || (x.base_text != null && x.text === x.base_text);
  const showSaved = (t) => {
    bar.state.textContent = `Saved · version ${t.version} · last by ${byName(t.provenance.updated_by)}`;
    bar.state.className = 'muted';
  };
  if (d && d.text != null && !unchanged(d)) {
    editor.value = d.text;
    base = { version: d.base_version, tab_version: d.base_tab_version, text: d.base_text ?? null };
    draftBanner.hidden = false;
    discard.hidden = false;
    draftBanner.textContent = `Your unsaved draft from ${when(d.saved_at)} is back (started from version ${d.base_version}; the note is at version ${tab.version}).`;
    bar.state.textContent = 'Unsaved draft';
  } else {
    if (d) dropDraft(ctx.noteId, ctx.tabId);
    editor.value = tab.text;
    showSaved(tab);
  }
  renderMarkdown(preview, editor.value);
  const keep = () => storeDraft(ctx.noteId, ctx.tabId, { ...(loadDraft(ctx.noteId, ctx.tabId) || {}), text: editor.value,
    base_version: base.version, base_tab_version: base.tab_version, base_text: base.text });
  let timer;
  editor.addEventListener('input', () => {
    // Back to the text it started from: there is no draft any more.
    if (base.text != null && editor.value === base.text) {
      dropDraft(ctx.noteId, ctx.tabId);
      discard.hidden = true;
      draftBanner.hidden = true;
      bar.state.textContent = `No unsaved changes · version ${base.version}`;
    } else {
      keep();
      discard.hidden = false;
      bar.state.textContent = 'Unsaved changes (kept in this browser)';
    }
    bar.state.className = 'muted';
    clearTimeout(timer);
    timer = setTimeout(() => renderMarkdown(preview, editor.value), 120);
  });
  // Tab indents and Shift+Tab outdents the selected lines; Escape first lets Tab leave.
  let escaped = false;
  editor.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { escaped = true; return; }
    if (e.key !== 'Tab' || escaped || e.ctrlKey || e.altKey || e.metaKey) { if (e.key !== 'Shift') escaped = false; return; }
    e.preventDefault();
    const { selectionStart: from, selectionEnd: to, value } = editor;
    const first = value.lastIndexOf('\n', from - 1) + 1;
    if (!e.shiftKey && from === to) {
      editor.setRangeText('  ', from, to, 'end');
    } else {
      // Whole lines: from the start of the first selected one to the end of the last.
      const stop = to > from && value[to - 1] === '\n' ? to - 1 : to;
      const next = value.indexOf('\n', stop);
      const end = next === -1 ? value.length : next;
      const lines = value.slice(first, end).split('\n');
      const changed = e.shiftKey ? lines.map((l) => l.replace(/^ {1,2}|^\t/, '')) : lines.map((l) => '  ' + l);
      const text = changed.join('\n');
      editor.setRangeText(text, first, end);
      const moved = changed[0].length - lines[0].length;
      if (from === to) editor.setSelectionRange(Math.max(first, from + moved), Math.max(first, from + moved));
      else editor.setSelectionRange(Math.max(first, from + moved), first + text.length);
    }
    editor.dispatchEvent(new Event('input'));
  });
  editor.addEventListener('blur', () => { escaped = false; });
  // The person's resolution of a merge is their new draft, based on the version merged with.
  const adopt = (text, m) => {
    editor.value = text;
    base = { version: m.version, tab_version: m.tab_version, text: null };
    keep();
    discard.hidden = false;
    remoteBanner.hidden = true;
    renderMarkdown(preview, text);
    bar.state.textContent = 'Unsaved draft (merged)';
  };
  const merge = (text, baseVersion, live) => openMerge(ctx, body, area, text, baseVersion, {
    save: (merged, m) => { adopt(merged, m); return save(merged); },
    edit: adopt,
  }, live);
  const save = async (text) => {
    bar.save.disabled = true;
    saving = true;
    // The tab's own version: approving or renaming the note does not make the save stale.
    const expected = base.tab_version != null ? { expected_version: base.tab_version, version_scope: 'tab' } : { expected_version: base.version };
    const r = await api('PUT', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId),
      { ...expected, text, idempotency_key: keyFor(ctx.noteId, ctx.tabId, text) });
    saving = false;
    bar.save.disabled = false;
    if (r.ok) {
      dropDraft(ctx.noteId, ctx.tabId);
      base = { version: r.body.version, tab_version: r.body.tab_version, text };
      draftBanner.hidden = true;
      remoteBanner.hidden = true;
      discard.hidden = true;
      bar.state.textContent = `Saved · version ${r.body.version}`;
      bar.state.className = 'muted';
      await refreshNote(ctx);
      return true;
    }
    if (r.status === 409 && r.body.error === 'version_conflict') {
      await merge(text, base.version);
      return false;
    }
    if (r.status === 409 && r.body.section_id) {
      // A section claim refused it: the outline names the section by its heading and shows who holds it now.
      if (!(ctx.sections || []).some((s) => s.section_id === r.body.section_id)) await ctx.refreshOutline?.();
      ctx.pollClaims?.();
    }
    refusedSave(bar, r.body, ctx);
    return false;
  };
  bar.save.addEventListener('click', () => save(editor.value));
  // The stored text, in place of whatever the editor holds.
  const reload = async () => {
    const now = await readTab(ctx).catch(() => null);
    if (!now) return;
    dropDraft(ctx.noteId, ctx.tabId);
    base = fresh(now);
    editor.value = now.text;
    renderMarkdown(preview, now.text);
    draftBanner.hidden = true;
    remoteBanner.hidden = true;
    discard.hidden = true;
    showSaved(now);
  };
  discard.addEventListener('click', async () => { await reload(); editor.focus(); });
  // Someone else wrote this tab: without a draft the text is refreshed in
  // place; with one, the person is told who, and offered to merge it in.
  ctx.onRemoteChange = async (t) => {
    if (!t || saving || base.tab_version == null || t.tab_version <= base.tab_version || $('#merge')) return;
    const drafted = base.text == null || editor.value !== base.text;
    if (!drafted) return reload();
    const mergeIn = h('button', { id: 'merge-theirs', class: 'primary' }, 'Merge into my draft');
    mergeIn.addEventListener('click', async () => {
      mergeIn.disabled = true;
      const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/merge', { base_version: base.version, text: editor.value });
      mergeIn.disabled = false;
      if (r.ok && r.body.clean) {
        adopt(r.body.merged, r.body);
        bar.state.textContent = `Their change is merged into your draft (now based on version ${r.body.version}); save when ready.`;
        return;
      }
      remoteBanner.hidden = true;
      merge(editor.value, base.version, true);
    });
    remoteBanner.replaceChildren(`${t.updated_by} (${t.updated_by_actor}) changed this note at ${clock(t.updated_at)} while you were editing. Your draft is kept. `, mergeIn);
    remoteBanner.hidden = false;
  };
  ctx.onClaims?.();
}

/** The stale-save screen: the merge of the person's draft with the text now. */
async function openMerge(ctx, body, area, mine, baseVersion, then, live = false) {
  const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/merge', { base_version: baseVersion, text: mine });
  if (!r.ok) {
    status('Not saved, and the merge is unavailable: ' + plainRefusal(r.body) + ' Your draft is kept.', true);
    return;
  }
  const m = r.body;
  refreshNote(ctx);
  const now = await readTab(ctx).catch(() => null);
  const by = now ? `${byName(now.provenance.updated_by)}, ${when(now.provenance.updated_at)}` : 'someone else';
  const choices = new Map();
  const saveBtn = h('button', { id: 'merge-save', class: 'primary' }, 'Save merged text');
  const left = h('span', { id: 'merge-left', class: 'muted' });
  const update = () => {
    const open = m.conflicts.length - choices.size;
    saveBtn.disabled = open > 0;
    left.textContent = open > 0 ? `${open} conflict${open > 1 ? 's' : ''} to decide` : 'Ready to save';
  };
  const segs = m.segments.map((s) => {
    if (s.source !== 'conflict') {
      return h('pre', { class: 'seg seg-' + s.source, 'data-source': s.source, title: s.source === 'mine' ? 'your change, merged in' : s.source === 'theirs' ? 'their change' : '' }, s.text);
    }
    const result = h('textarea', { class: 'conflict-result', placeholder: 'Pick a side or write the result', 'aria-label': `Result for the conflict at line ${s.base_start}` });
    const box = h('div', { class: 'conflict', 'data-conflict': s.conflict });
    const pick = (text) => { result.value = text; choices.set(s.conflict, text); box.classList.add('resolved'); update(); };
    result.addEventListener('input', () => { choices.set(s.conflict, result.value); box.classList.add('resolved'); update(); });
    box.append(
      h('div', { class: 'muted' }, `Conflict at line ${s.base_start}: both changed the same lines.`),
      h('div', { class: 'sides' },
        h('div', { class: 'theirs' }, h('strong', {}, 'Theirs'), ` (${by})`, h('pre', {}, s.theirs), h('button', { class: 'pick-theirs', onclick: () => pick(s.theirs) }, 'Keep theirs')),
        h('div', { class: 'mine' }, h('strong', {}, 'Yours'), h('pre', {}, s.mine), h('button', { class: 'pick-mine', onclick: () => pick(s.mine) }, 'Keep mine'))),
      h('div', { class: 'row' }, h('button', { class: 'pick-both', onclick: () => pick(s.theirs + s.mine) }, 'Keep both (theirs, then mine)')),
      result);
    return box;
  });
  const text = () => m.segments.map((s) => (s.source === 'conflict' ? choices.get(s.conflict) ?? s.text : s.text)).join('');
  const screen = h('div', { id: 'merge', class: 'merge' },
    h('div', { class: 'banner warn' },
      live ? `While you were editing, the note moved from version ${baseVersion} to ${m.version} (the tab was last written by ${by}). `
        : `Your save was stale: the note moved from version ${baseVersion} to ${m.version} (the tab was last written by ${by}). `,
      m.clean ? 'Your changes and theirs do not overlap: they are merged below, yours highlighted in green. Check and save.'
        : 'Changes that do not overlap are merged below (yours in green); the overlapping ones are side by side: pick or edit each. Nothing is saved until you do.'),
    h('div', { id: 'merge-view' }, segs),
    h('div', { class: 'row' }, saveBtn, left,
      h('button', { id: 'merge-edit', onclick: () => { const t = text(); close(); then.edit(t, m); } }, 'Edit this text first'),
      h('button', { id: 'merge-cancel', onclick: () => close() }, 'Back to my draft')));
  const close = () => { screen.remove(); area.hidden = false; };
  saveBtn.addEventListener('click', async () => {
    const t = text();
    close();
    await then.save(t, m);
  });
  // Escape goes back to the draft, as the last button does.
  screen.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); close(); $('#editor')?.focus(); } });
  area.hidden = true;
  body.append(screen);
  update();
  saveBtn.disabled ? screen.querySelector('button')?.focus() : saveBtn.focus();
}

// ------------------------------------------------------- slides editor ---

/** Saving a whole-tab document (slides, sheets): conditional, keyed, draft kept on refusal. */
async function saveData(ctx, bar, data, version, onSaved) {
  const content = JSON.stringify(data);
  const r = await api('PUT', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId), { expected_version: version, data, idempotency_key: keyFor(ctx.noteId, ctx.tabId, content) });
  if (r.ok) {
    dropDraft(ctx.noteId, ctx.tabId);
    bar.state.textContent = `Saved · version ${r.body.version}`;
    bar.state.className = 'muted';
    await refreshNote(ctx);
    onSaved(r.body.version);
    return;
  }
  refusedSave(bar, r.body);
  if (r.status === 409 && r.body.error === 'version_conflict') {
    const over = h('button', { id: 'save-over', onclick: () => { over.remove(); saveData(ctx, bar, data, r.body.current_version, onSaved); } }, `Save mine over version ${r.body.current_version}`);
    const reload = h('button', { id: 'load-theirs', onclick: () => { dropDraft(ctx.noteId, ctx.tabId); route(); } }, 'Discard mine, load theirs');
    bar.state.after(over, reload);
  }
}

async function slidesEditor(ctx, body) {
  const tab = await readTab(ctx);
  const bar = saveBar(ctx);
  const d = loadDraft(ctx.noteId, ctx.tabId);
  let version = tab.version;
  let slides = tab.slides.map(({ title, body, notes }) => ({ title, body: body || '', notes: notes || '' }));
  if (d && d.slides) { slides = d.slides; version = d.base_version; bar.state.textContent = 'Unsaved draft (kept in this browser)'; }
  const list = h('div', { id: 'slides' });
  const keep = () => storeDraft(ctx.noteId, ctx.tabId, { ...(loadDraft(ctx.noteId, ctx.tabId) || {}), slides, base_version: version });
  const draw = () => list.replaceChildren(...slides.map((s, i) => {
    const field = (name, el) => { el.value = s[name]; el.addEventListener('input', () => { s[name] = el.value; keep(); }); return el; };
    return h('div', { class: 'slide', 'data-index': i },
      h('div', { class: 'row' }, h('strong', {}, 'Slide ' + (i + 1)), h('button', { class: 'remove-slide', onclick: () => { slides.splice(i, 1); keep(); draw(); } }, 'Remove')),
      field('title', h('input', { class: 'slide-title', placeholder: 'Title', maxlength: 200 })),
      field('body', h('textarea', { class: 'slide-body', placeholder: 'Body', rows: 3 })),
      field('notes', h('textarea', { class: 'slide-notes', placeholder: 'Speaker notes', rows: 2 })));
  }));
  draw();
  body.replaceChildren(h('div', {}, bar.holder, list, h('div', { class: 'row' }, h('button', { id: 'add-slide', onclick: () => { slides.push({ title: 'New slide', body: '', notes: '' }); keep(); draw(); } }, 'Add slide')), bar.bar));
  bar.save.addEventListener('click', () => saveData(ctx, bar, { slides }, version, (v) => { version = v; }));
  ctx.onClaims?.();
}

// -------------------------------------------------------- sheet editor ---

const colName = (c) => { let s = ''; for (c += 1; c > 0; c = Math.floor((c - 1) / 26)) s = String.fromCharCode(65 + ((c - 1) % 26)) + s; return s; };
const cellValue = (s) => (s === '' ? null : /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : s);

async function sheetEditor(ctx, body) {
  const tab = await readTab(ctx);
  const bar = saveBar(ctx);
  const sheet = tab.sheets[0];
  if (!sheet) return body.replaceChildren(h('p', { class: 'muted' }, 'This tab has no sheet.'));
  const nr = Math.min(100, Math.max(sheet.rows + 3, 10));
  const nc = Math.min(26, Math.max(sheet.cols + 2, 6));
  const q = new URLSearchParams({ sheet_id: sheet.sheet_id, range: 'A1:' + colName(nc - 1) + nr });
  const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/range?' + q);
  if (!r.ok) return body.replaceChildren(h('p', { class: 'banner bad' }, plainRefusal(r.body)));
  const d = loadDraft(ctx.noteId, ctx.tabId);
  let version = r.body.version;
  const values = r.body.values.map((row) => row.map((v) => (v == null ? '' : String(v))));
  if (d && d.cells) { for (const [k, v] of Object.entries(d.cells)) { const [i, j] = k.split(',').map(Number); if (values[i]) values[i][j] = v; } version = d.base_version; bar.state.textContent = 'Unsaved draft (kept in this browser)'; }
  const changed = d && d.cells ? { ...d.cells } : {};
  const table = h('table', { id: 'grid', class: 'grid' },
    h('tr', {}, h('th', {}), Array.from({ length: nc }, (_, j) => h('th', {}, colName(j)))),
    values.map((row, i) => h('tr', {}, h('th', {}, String(i + 1)), row.map((v, j) => {
      const input = h('input', { 'data-cell': colName(j) + (i + 1), value: v });
      input.addEventListener('input', () => { values[i][j] = input.value; changed[i + ',' + j] = input.value; storeDraft(ctx.noteId, ctx.tabId, { cells: changed, base_version: version }); });
      return h('td', {}, input);
    }))));
  body.replaceChildren(h('div', {}, bar.holder, h('p', { class: 'muted' }, `Sheet ${sheet.name} · ${sheet.rows} × ${sheet.cols} cells used`), table, bar.bar));
  bar.save.addEventListener('click', async () => {
    const keys = Object.keys(changed).map((k) => k.split(',').map(Number));
    if (!keys.length) { bar.state.textContent = 'Nothing changed'; return; }
    // The smallest block holding every changed cell, written as one conditional edit.
    const r0 = Math.min(...keys.map((k) => k[0])), r1 = Math.max(...keys.map((k) => k[0]));
    const c0 = Math.min(...keys.map((k) => k[1])), c1 = Math.max(...keys.map((k) => k[1]));
    const block = values.slice(r0, r1 + 1).map((row) => row.slice(c0, c1 + 1).map(cellValue));
    const args = { operation: 'sheet_set_range', sheet_id: sheet.sheet_id, start_row: r0, start_col: c0, values: block, expected_version: version };
    args.idempotency_key = keyFor(ctx.noteId, ctx.tabId, JSON.stringify(args));
    const w = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/tabs/' + enc(ctx.tabId) + '/edit', args);
    if (!w.ok) return refusedSave(bar, w.body);
    dropDraft(ctx.noteId, ctx.tabId);
    for (const k of Object.keys(changed)) delete changed[k];
    version = w.body.version;
    bar.state.textContent = `Saved · version ${w.body.version}`;
    bar.state.className = 'muted';
    refreshNote(ctx);
  });
  ctx.onClaims?.();
}

// ------------------------------------------------- sources and files -----

/** Every attachment of one kind (`file` or `source`), all pages. */
async function attachments(ctx, kind) {
  const out = [];
  let cursor = null;
  do {
    const q = new URLSearchParams({ kind: kind + 's', limit: 50 });
    if (cursor) q.set('cursor', cursor);
    const r = await api('GET', '/api/v1/notes/' + enc(ctx.noteId) + '/attachments?' + q);
    if (!r.ok) throw new Error(plainRefusal(r.body));
    out.push(...r.body.attachments.filter((a) => a.kind === kind));
    cursor = r.body.next_cursor;
  } while (cursor);
  return out;
}

async function sourcesView(ctx, body) {
  const sources = await attachments(ctx, 'source');
  const url = h('input', { id: 'source-url', placeholder: 'https://…', size: 40 });
  const title = h('input', { id: 'source-title', placeholder: 'Title', maxlength: 300 });
  const msg = h('span', { id: 'source-status', class: 'muted' });
  const add = async () => {
    const args = { url: url.value, title: title.value, expected_version: ctx.note.version, idempotency_key: newKey() };
    const r = await api('POST', '/api/v1/notes/' + enc(ctx.noteId) + '/sources', args);
    if (!r.ok) { msg.textContent = plainRefusal(r.body); msg.className = 'bad'; return; }
    if (r.body.already_attached) { msg.textContent = 'Already attached as “' + r.body.title + '” (' + r.body.url + ').'; msg.className = 'muted'; return; }
    await refreshNote(ctx);
    sourcesView(ctx, body);
  };
  body.replaceChildren(
    h('h3', {}, 'Sources'),
    sources.length ? '' : h('p', { class: 'muted' }, 'No sources yet: add a link below.'),
    h('ul', { id: 'sources', class: 'note-list' }, sources.map((s) => h('li', {}, safeLink(s.url, s.title || s.url), h('span', { class: 'muted' }, s.url), h('span', { class: 'muted' }, 'added by ' + byName(s.provenance.author))))),
    h('div', { class: 'row' }, url, title, h('button', { id: 'add-source', onclick: add }, 'Add source'), msg));
}

async function filesView(ctx, body) {
  const files = await attachments(ctx, 'file');
  body.replaceChildren(
    h('h3', {}, 'Files'),
    files.length ? '' : h('p', { class: 'muted' }, 'No files attached.'),
    h('table', { id: 'files', class: 'grid' }, h('tr', {}, h('th', {}, 'name'), h('th', {}, 'type'), h('th', {}, 'bytes'), h('th', {}, 'attached by')),
      files.map((f) => h('tr', {}, h('td', {}, f.name), h('td', {}, f.media_type), h('td', {}, String(f.size_bytes)), h('td', {}, byName(f.provenance?.author))))));
}

// ------------------------------------------------------------- consent ---

/** A consent request (`#/consent/<request>`) reached without a sign-in:
 * the route is kept for after the sign-in, which starts at once, unless the
 * authorization server just said this browser has no session. */
function consentSignIn() {
  sessionStorage.setItem(AFTER, location.hash);
  if (loginRefused || !config.client_id || !config.authorization_server) {
    return showSignIn(loginRefused ? NO_SESSION : 'Sign in first to connect an app.');
  }
  main().replaceChildren(h('p', { class: 'muted' }, 'Signing in…'));
  oauthStart(config).catch((e) => showSignIn(e.message));
}

const SCOPE_WORDS = {
  'notes:read': 'read notes approved for agents',
  'notes:write': 'write to notes approved for agents',
};

/** Where the authorization server sends the browser: never a script URL. */
function safeRedirect(url) {
  try {
    const u = new URL(url);
    return !['javascript:', 'data:', 'vbscript:', 'file:', 'blob:'].includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

/** What an app asks for, and the person's answer. Everything the app said
 * about itself (name, addresses) is set as text. */
async function showConsent(request) {
  main().replaceChildren(h('p', { class: 'muted' }, 'Loading the request…'));
  const r = await api('GET', '/oauth/consent?request=' + enc(request));
  if (!r.ok) {
    if (r.status === 401) return;
    sessionStorage.removeItem(AFTER);
    const why = r.status === 403
      ? 'Only a person can connect an app, and this browser is signed in with a token that is not a person\'s.'
      : 'This request to connect an app cannot be used: ' + (r.body.error_description || r.body.error || 'status ' + r.status) + '. Start connecting again from the app.';
    return main().replaceChildren(h('section', { class: 'card' },
      h('h2', {}, 'Connect an app'),
      h('p', { id: 'consent-refused', class: 'banner bad' }, why),
      h('a', { href: '#/' }, 'All notes')));
  }
  sessionStorage.removeItem(AFTER);
  const c = r.body;
  const answering = h('p', { id: 'consent-status', class: 'muted', role: 'status' });
  const answer = async (approve) => {
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    answering.textContent = approve ? 'Connecting…' : 'Telling the app no…';
    const a = await api('POST', '/oauth/consent', { request, approve });
    const to = a.ok && safeRedirect(a.body.redirect_to);
    if (!to) {
      answering.textContent = a.ok ? 'Cairn answered with an address it cannot send you to.' : 'Cairn could not take your answer: ' + (a.body.error_description || plainRefusal(a.body));
      answering.className = 'banner bad';
      for (const b of card.querySelectorAll('button')) b.disabled = false;
      return;
    }
    location.assign(to);
  };
  const how = c.registered_by === 'metadata_document'
    ? ['identified by its own web address ', h('code', {}, c.client_id)]
    : ['registered itself just now (Cairn cannot vouch for its name)'];
  const card = h('section', { class: 'card consent', id: 'consent', role: 'dialog', 'aria-labelledby': 'consent-title' },
    h('h2', { id: 'consent-title' }, 'Connect ' + (c.client_name || 'an app') + '?'),
    h('p', { id: 'consent-app' }, h('strong', {}, c.client_name || 'This app'), ' ', how, '.'),
    h('p', { id: 'consent-redirect' }, 'It will send you back to ', h('strong', {}, c.redirect_host || ''), h('br', {}), h('span', { class: 'muted small' }, c.redirect_uri || '')),
    h('p', {}, 'It may:'),
    h('ul', { id: 'consent-scopes' }, (c.scopes || []).map((s) => h('li', { 'data-scope': s }, SCOPE_WORDS[s] || s))),
    h('p', { id: 'consent-tenant' }, 'In tenant ', h('strong', {}, c.tenant || ''), '.'),
    h('p', { id: 'consent-agent' }, 'It will act as an agent named ', h('strong', {}, c.agent_name || ''), ', never as you.'),
    c.expires_at ? h('p', { class: 'muted small' }, 'Answer before ' + clock(c.expires_at) + '.') : null,
    h('div', { class: 'row' },
      h('button', { id: 'consent-approve', class: 'primary', onclick: () => answer(true) }, 'Allow'),
      h('button', { id: 'consent-deny', onclick: () => answer(false) }, 'Deny')),
    answering);
  main().replaceChildren(card);
  main().dataset.loaded = 'consent';
  $('#consent-deny').focus();
}

// ------------------------------------------------------------ settings ---

/** Settings: the apps connected to the person (Cairn's own server), and for admins, invites. */
async function showSettings() {
  main().replaceChildren(h('h2', {}, 'Settings'));
  if (!config.own) {
    main().append(h('p', { class: 'muted' }, 'Apps and people are managed at your organization\'s sign-in service.'));
    main().dataset.loaded = 'settings';
    return;
  }
  const apps = h('section', { id: 'apps', class: 'panel', 'aria-labelledby': 'apps-title' }, h('h3', { id: 'apps-title' }, 'Connected apps'));
  main().append(apps);
  if (me().role === 'admin') main().append(inviteForm());
  await listApps(apps);
  main().dataset.loaded = 'settings';
}

async function listApps(section, said) {
  const r = await api('GET', '/oauth/apps');
  const head = section.querySelector('h3');
  // replaceChildren shows a null as the text "null": nothing to say is an empty string.
  const msg = said ? h('p', { id: 'apps-status', class: 'banner info', role: 'status' }, said) : '';
  if (!r.ok) {
    return section.replaceChildren(head, msg, h('p', { class: 'banner bad' }, 'Cairn could not list your apps: ' + (r.body.error_description || plainRefusal(r.body))));
  }
  const list = r.body.apps || [];
  const disconnect = async (app, button) => {
    button.disabled = true;
    const d = await api('POST', '/oauth/apps/revoke', { client_id: app.client_id });
    if (!d.ok) {
      button.disabled = false;
      return status('Cairn could not disconnect ' + (app.client_name || app.client_id) + ': ' + (d.body.error_description || plainRefusal(d.body)), true);
    }
    listApps(section, 'Disconnected ' + (app.client_name || app.client_id) + ': it can no longer refresh; its current access lasts at most 10 minutes.');
  };
  section.replaceChildren(head, msg,
    list.length ? '' : h('p', { id: 'no-apps', class: 'muted' }, 'No apps are connected to you. An app you allow (an MCP client) shows here.'),
    h('ul', { id: 'app-list', class: 'note-list' }, list.map((app) => {
      const button = h('button', { class: 'disconnect' }, 'Disconnect');
      button.addEventListener('click', () => disconnect(app, button));
      button.setAttribute('aria-label', 'Disconnect ' + (app.client_name || app.client_id));
      return h('li', { 'data-client-id': app.client_id },
        h('span', {}, h('strong', {}, app.client_name || app.client_id), h('br', {}),
          h('span', { class: 'muted small' }, 'as agent ', app.agent_name || '', ' · may ', (app.scopes || []).map((s) => SCOPE_WORDS[s] || s).join(', '))),
        h('span', { class: 'muted small' }, 'sends you back to ', app.redirect_uri || '', h('br', {}),
          app.registered_by === 'metadata_document' ? 'identified by ' + app.client_id : 'registered itself'),
        h('span', { class: 'muted small' }, 'allowed ' + when(app.approved_at), h('br', {}), app.last_used_at ? 'last used ' + when(app.last_used_at) : 'not used yet'),
        button);
    })));
}

/** An admin's "Invite someone": a one-time sign-in link for a new person of their tenant. */
function inviteForm() {
  const name = h('input', { id: 'invite-name', required: true, maxlength: 100, placeholder: 'Their name', 'aria-label': 'Name of the person to invite' });
  const role = h('select', { id: 'invite-role', 'aria-label': 'Role' }, h('option', { value: 'member' }, 'member'), h('option', { value: 'admin' }, 'admin'));
  const out = h('div', { id: 'invite-result' });
  const submit = async (e) => {
    e.preventDefault();
    if (!name.value.trim()) return name.focus();
    const r = await api('POST', '/oauth/invites', { name: name.value.trim(), role: role.value });
    if (!r.ok) {
      return out.replaceChildren(h('p', { class: 'banner bad' }, r.status === 403
        ? 'Only an admin can invite people.'
        : 'Cairn could not make an invite: ' + (r.body.error_description || plainRefusal(r.body))));
    }
    const link = h('input', { id: 'invite-link', readonly: true, value: r.body.link, size: 48, 'aria-label': 'One-time sign-in link for ' + r.body.name });
    const copied = h('span', { class: 'muted small', role: 'status' });
    const copy = async () => {
      link.select();
      try {
        await navigator.clipboard.writeText(r.body.link);
        copied.textContent = 'Copied.';
      } catch {
        copied.textContent = 'Select the link and copy it.';
      }
    };
    out.replaceChildren(
      h('p', {}, 'A sign-in link for ', h('strong', {}, r.body.name), ' (', r.body.role, ' of tenant ', r.body.tenant, '). It works once, until ' + when(r.body.expires_at) + '. Send it to them privately.'),
      h('div', { class: 'row' }, link, h('button', { id: 'invite-copy', type: 'button', onclick: copy }, 'Copy'), copied));
    name.value = '';
  };
  return h('section', { id: 'invite', class: 'panel', 'aria-labelledby': 'invite-title' },
    h('h3', { id: 'invite-title' }, 'Invite someone'),
    h('p', { class: 'muted small' }, 'They get a one-time sign-in link for this tenant. People have no passwords: a new link signs them in again.'),
    h('form', { class: 'row', onsubmit: submit },
      h('label', {}, 'Name ', name), h('label', {}, 'Role ', role),
      h('button', { id: 'invite-create', type: 'submit', class: 'primary' }, 'Make a link')),
    out);
}

// ----------------------------------------------------------------- boot --

// Signing out forgets the sign-in and every draft kept in this browser;
// with Cairn's own server it also revokes the refresh token (the whole
// sign-in: no tab can refresh it again) and ends the session cookie.
$('#sign-out').addEventListener('click', async () => {
  releaseMine(true);
  const rt = localStorage.getItem(REFRESH);
  forget();
  for (const k of Object.keys(localStorage)) if (k.startsWith('cairn.draft')) localStorage.removeItem(k);
  if (config.own) {
    await revokeRefresh(rt);
    await endSession();
  }
  location.hash = '#/';
  route();
});
window.addEventListener('hashchange', route);
// A sign-in or sign-out in another browser tab ends or switches this one's
// session too (its drafts were cleared there). A refresh in another tab
// (the same person, a new access token) changes nothing on this page but
// its refresh timer.
window.addEventListener('storage', (e) => {
  if (e.key === null) return route();
  if (e.key !== TOKEN) return;
  const was = claimsOf(e.oldValue || ''), now = claimsOf(e.newValue || '');
  const same = was && now && was.iss === now.iss && was.sub === now.sub && was.tenant === now.tenant;
  if (same) scheduleRefresh();
  else route();
});
// Ctrl/Cmd+S saves the open tab (not the browser's "save page" dialog).
document.addEventListener('keydown', (e) => {
  if (!(e.ctrlKey || e.metaKey) || e.altKey || e.key.toLowerCase() !== 's') return;
  e.preventDefault();
  const save = $('#save');
  if (save && !save.disabled && !save.closest('[hidden]')) save.click();
});
const config = await loadConfig();
// Cairn is its own authorization server: config says `own`, or (a server
// that does not say) the editor's client id at this very origin.
if (config.own === undefined) {
  try {
    config.own = config.client_id === 'cairn-editor' && new URL(config.authorization_server).origin === location.origin;
  } catch {
    config.own = false;
  }
}
const signInError = await oauthFinish();
// No session here: the sign-in card says so (once; nothing starts again by itself).
if (loginRefused) signOutNotice = signInError;
await route();
if (signInError && !loginRefused) status(signInError, true);
