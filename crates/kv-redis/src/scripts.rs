//! The server-side Lua scripts, one per operation. Each runs atomically on
//! the server (no other command runs in between), reads everything it
//! decides on before its first write, and touches only keys of one hash tag
//! per Cairn key (declared in `KEYS`, or, for the sweep, records named after
//! members of a markers set of the same tag).
//!
//! Every script starts with a shebang (`#!lua`), which Redis 7 and Valkey
//! need for the flags: a write script is refused whole with `OOM` when the
//! server is over `maxmemory` (never half run); `no-writes` lets the reads
//! run under `OOM` and on replicas; `allow-oom` lets the delete and the sweep
//! run under `OOM`, so a full store can be emptied.
//!
//! Numbers: Redis Lua has only doubles. Stamps stay below 2^53 (they are
//! microseconds since 1970 for the next two centuries), are formatted with
//! `%d` and compared as strings where they must be equal; counters are done
//! in two exact 32-bit halves.

use redis::Script;

/// Shared helpers, put in front of every script body.
const PRELUDE: &str = r#"
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function int(n)
  return string.format('%d', n)
end
-- The next stamp of a hash tag: one above the last one it handed out, and at
-- least the server's clock in microseconds.
local function next_stamp(seq, now)
  local s = (tonumber(redis.call('GET', seq)) or 0) + 1
  if now > s then s = now end
  s = int(s)
  redis.call('SET', seq, s)
  return s
end
-- Write a live value with a fresh stamp; it leaves the markers, joins the index.
local function put(rec, seq, idx, markers, key, value, now)
  local s = next_stamp(seq, now)
  redis.call('HSET', rec, 'v', value, 's', s)
  redis.call('ZADD', idx, '0', key)
  redis.call('ZREM', markers, key)
end
-- Turn a live value into a delete marker with a fresh stamp.
local function tomb(rec, seq, idx, markers, key, now)
  local s = next_stamp(seq, now)
  redis.call('HDEL', rec, 'v')
  redis.call('HSET', rec, 's', s)
  redis.call('ZREM', idx, key)
  redis.call('ZADD', markers, int(math.floor(now / 1000)), key)
end
"#;

/// `read`. KEYS: record, sequence. Returns `{value|nil, stamp|nil, seq}`:
/// the value and the stamp and the tag's sequence, in one atomic step, so an
/// absent key is observed together with the sequence it was absent at.
const READ: &str = r#"
local r = redis.call('HMGET', KEYS[1], 'v', 's')
return {r[1], r[2], redis.call('GET', KEYS[2]) or '0'}
"#;

/// `get_many`. KEYS: records (of one tag). Returns their values (nil: absent).
const GET_MANY: &str = r#"
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call('HGET', KEYS[i], 'v')
end
return out
"#;

/// `swap`. KEYS: record, sequence, purge floor, index, markers. ARGV: `P` or
/// `A` (observed present or absent), the observed number, the value, the
/// Cairn key. The rule is `cairn_kv::Stamped::swap_allowed`. Returns `{1}`
/// when written, else `{0, value|nil, stamp|nil, seq}`: a fresh read taken in
/// the same atomic step as the refusal.
const SWAP: &str = r#"
local r = redis.call('HMGET', KEYS[1], 'v', 's')
local ok
if ARGV[1] == 'P' then
  ok = r[1] ~= false and r[2] == ARGV[2]
elseif r[1] ~= false then
  ok = false
elseif r[2] ~= false then
  ok = tonumber(r[2]) <= tonumber(ARGV[2])
else
  ok = tonumber(ARGV[2]) >= (tonumber(redis.call('GET', KEYS[3])) or 0)
end
if not ok then
  return {0, r[1], r[2], redis.call('GET', KEYS[2]) or '0'}
end
put(KEYS[1], KEYS[2], KEYS[4], KEYS[5], ARGV[4], ARGV[3], now_us())
return {1}
"#;

/// `set_many` (and `set`). KEYS: record, sequence, index, markers of each
/// pair, in order. ARGV: key, value of each pair. Nothing to decide, so
/// nothing can stop it half way: all or nothing.
const SET_MANY: &str = r#"
local now = now_us()
for i = 1, #ARGV / 2 do
  local k = 4 * (i - 1)
  put(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], ARGV[2 * i - 1], ARGV[2 * i], now)
end
return 1
"#;

/// `delete_many` (and `delete`). KEYS: record, sequence, index, markers of
/// each key. ARGV: the keys (distinct). First finds which are live, then
/// turns each live one into a marker with a fresh stamp. Returns how many.
const DELETE_MANY: &str = r#"
local live = {}
for i = 1, #ARGV do
  live[i] = redis.call('HEXISTS', KEYS[4 * i - 3], 'v') == 1
end
local now = now_us()
local n = 0
for i = 1, #ARGV do
  if live[i] then
    local k = 4 * (i - 1)
    tomb(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], ARGV[i], now)
    n = n + 1
  end
end
return n
"#;

/// `increment`. KEYS: record, sequence, index, markers. ARGV: the key, the
/// low and high 32 bits of the delta (two's complement). Returns `{1, the
/// 8 new bytes}`, or `{0, length}` for a value that is not 8 bytes (nothing
/// written). Wrapping 64-bit addition, exact, in two halves.
const INCREMENT: &str = r#"
local v = redis.call('HGET', KEYS[1], 'v')
local lo, hi = 0, 0
if v then
  if #v ~= 8 then
    return {0, #v}
  end
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(v, 1, 8)
  lo = b1 + b2 * 256 + b3 * 65536 + b4 * 16777216
  hi = b5 + b6 * 256 + b7 * 65536 + b8 * 16777216
end
lo = lo + tonumber(ARGV[2])
local carry = 0
if lo >= 4294967296 then
  lo = lo - 4294967296
  carry = 1
end
hi = (hi + tonumber(ARGV[3]) + carry) % 4294967296
local function le4(x)
  return string.char(x % 256, math.floor(x / 256) % 256, math.floor(x / 65536) % 256, math.floor(x / 16777216) % 256)
end
local out = le4(lo) .. le4(hi)
put(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], out, now_us())
return {1, out}
"#;

/// `sweep`, for one bucket and tag. KEYS: markers, purge floor. ARGV: age in
/// ms, the record-name prefix of the bucket and tag, the batch size. Drops up
/// to a batch of markers deleted at least that long ago (server clock) and
/// raises the purge floor to the highest stamp dropped, in the same atomic
/// step. Returns `{dropped, markers looked at}`.
const SWEEP: &str = r#"
local t = redis.call('TIME')
local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[1])
if cutoff < 0 then
  return {0, 0}
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(cutoff), 'LIMIT', '0', ARGV[3])
if #old == 0 then
  return {0, 0}
end
local floor = tonumber(redis.call('GET', KEYS[2])) or 0
local n = 0
for _, key in ipairs(old) do
  local rec = ARGV[2] .. key
  local r = redis.call('HMGET', rec, 'v', 's')
  if r[1] == false and r[2] ~= false then
    local s = tonumber(r[2])
    if s > floor then floor = s end
    redis.call('DEL', rec)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], key)
end
redis.call('SET', KEYS[2], int(floor))
return {n, #old}
"#;

/// The loaded scripts of a store.
pub(crate) struct Scripts {
    pub read: Script,
    pub get_many: Script,
    pub swap: Script,
    pub set_many: Script,
    pub delete_many: Script,
    pub increment: Script,
    pub sweep: Script,
}

fn build(flags: &str, body: &str) -> Script {
    let shebang = if flags.is_empty() { "#!lua".to_string() } else { format!("#!lua flags={flags}") };
    Script::new(&format!("{shebang}\n{PRELUDE}\n{body}"))
}

impl Scripts {
    pub fn new() -> Self {
        Self {
            read: build("no-writes", READ),
            get_many: build("no-writes", GET_MANY),
            swap: build("", SWAP),
            set_many: build("", SET_MANY),
            delete_many: build("allow-oom", DELETE_MANY),
            increment: build("", INCREMENT),
            sweep: build("allow-oom", SWEEP),
        }
    }

    pub fn all(&self) -> [(&'static str, &Script); 7] {
        [
            ("read", &self.read),
            ("get_many", &self.get_many),
            ("swap", &self.swap),
            ("set_many", &self.set_many),
            ("delete_many", &self.delete_many),
            ("increment", &self.increment),
            ("sweep", &self.sweep),
        ]
    }
}
