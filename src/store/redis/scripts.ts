// The Lua scripts of the Redis backend, and the key layout they share. Scripts only validate and write strings.
/**
 * Every key of one board lives under one hash tag, `{prefix}`, so every script touches one cluster slot:
 *
 * - `rev`       the store revision, a counter bumped once by every commit that writes
 * - `rec`       hash: storage key -> the record's JSON text, `{"rev":N,…}`, exactly as `JSON.stringify` produced it
 *               (the script only prepends `{"rev":N,` to the text it was given; it never decodes or re-encodes JSON)
 * - `idx`       sorted set, all scores 0: keys of records that are not tombstones, for `ZRANGEBYLEX` listing
 *               (Redis compares members byte by byte, and UTF-8 byte order is code point order)
 * - `exp`       sorted set scored by expiry (epoch ms) of records that have one
 * - `tomb`      sorted set scored by the deletion time of tombstones
 * - `log`       stream: the change log, one entry per commit (more for very large commits) with id
 *               `<revision>-<n>`; field `""` holds the commit time, then one field per logged key whose value is the
 *               version, suffixed `d` for a deletion
 * - `compacted` the highest revision whose log entries were pruned
 * - `fate:ID`   a write's marker, set by the commit script that applied it (its revision), or a fence set by a
 *               lookup that found none (`fenced`: that commit can no longer apply); both expire on their own
 * - `turn`      the token of the one transaction, in any process, that keeps losing to other commits and now has the
 *               turn (see turn.ts): while it exists, every other commit that writes is refused as a conflict; the
 *               holder's commit deletes it, and it expires within seconds unless the holder renews it. Processes of
 *               an older version ignore it: they commit as before, and a holder may then still lose to them (no
 *               harm to correctness, so the layout version stays)
 * - `layout`    the key layout version (a newer one is refused); read by the backend, never passed to a script
 * - `epoch`     a random id set when the board is first opened: large records a process holds are taken for the
 *               stored ones only under the epoch they were read in (a board deleted and made again starts its revisions
 *               over); passed to the reading scripts as KEYS[8]
 */
export const KEY_NAMES = ['rev', 'rec', 'idx', 'exp', 'tomb', 'log', 'compacted'] as const;

/** The key layout this code reads and writes, kept under the `layout` key; a newer one is refused. */
export const LAYOUT = 1;

/** Redis keys of the board `prefix`, in the order every script receives them. */
export const keysOf = (prefix: string): string[] => KEY_NAMES.map((name) => `{${prefix}}:${name}`);

/** The same keys by name (`named(keys).rec`), for code outside the scripts. */
export const named = (keys: readonly string[]): Record<(typeof KEY_NAMES)[number], string> =>
  Object.fromEntries(KEY_NAMES.map((name, i) => [name, keys[i]])) as Record<(typeof KEY_NAMES)[number], string>;

/** The key that holds the layout version of the board `prefix`. */
export const layoutKeyOf = (prefix: string): string => `{${prefix}}:layout`;

/** The key that holds the epoch of the board `prefix` (see the layout above). */
export const epochKeyOf = (prefix: string): string => `{${prefix}}:epoch`;

/** The marker key of one write (passed to the commit and lookup scripts as KEYS[8]). */
export const fateKeyOf = (prefix: string, id: string): string => `{${prefix}}:fate:${id}`;

/** The turn key of the board `prefix` (passed to a commit that writes as KEYS[9], and to TURN as KEYS[8]). */
export const turnKeyOf = (prefix: string): string => `{${prefix}}:turn`;

/** How many logged keys one stream entry holds (Lua's `unpack` has a stack limit). */
export const LOG_CHUNK = 1000;

/** Lua: `revOf` reads the revision at the head of a record's text (0 absent, -1 unreadable), as the backend does. */
const REV_OF = `
local function revOf(raw)
  if not raw then return 0 end
  return tonumber(string.match(raw, '^{"rev":(%d+),')) or -1
end`;

/**
 * Lua shared by the reading scripts, which take what the caller holds: from ARGV[first], the epoch it holds records of,
 * then key, size in bytes and revision of each record it holds (size 0: none). `heldOf` gives those records (none when
 * the board's epoch, KEYS[8], is another) and the board's epoch; `sized` gives a record's text, or only its revision
 * (a number) when the text is the one held: the same size, written by the same revision.
 */
const HELD = `${REV_OF}
local function heldOf(first)
  local epoch = redis.call('GET', KEYS[8]) or ''
  local held = {}
  if ARGV[first] ~= '' and ARGV[first] == epoch then
    for i = first + 1, #ARGV, 3 do
      local bytes = tonumber(ARGV[i + 1])
      if bytes > 0 then held[ARGV[i]] = {bytes, tonumber(ARGV[i + 2])} end
    end
  end
  return held, epoch
end
local function sized(held, key, raw)
  local h = held[key]
  if raw and h and #raw == h[1] and revOf(raw) == h[2] then return h[2] end
  return raw
end`;

/**
 * The start of a transaction, atomically: the revision, the server clock, the board's epoch and the prefetched
 * records. ARGV: what is held (see HELD), naming every key to prefetch. Returns
 * `{revision, seconds, microseconds, epoch, record|revision|false…}`.
 */
export const BEGIN = `${HELD}
local held, epoch = heldOf(1)
local t = redis.call('TIME')
local out = {redis.call('GET', KEYS[1]) or '0', t[1], t[2], epoch}
for i = 2, #ARGV, 3 do out[#out + 1] = sized(held, ARGV[i], redis.call('HGET', KEYS[2], ARGV[i])) end
return out`;

/**
 * Records, with the board's epoch. ARGV: what is held (see HELD), naming every key to read. Returns
 * `{epoch, record|revision|false…}`.
 */
export const READ = `${HELD}
local held, epoch = heldOf(1)
local out = {epoch}
for i = 2, #ARGV, 3 do out[#out + 1] = sized(held, ARGV[i], redis.call('HGET', KEYS[2], ARGV[i])) end
return out`;

/**
 * Lua shared by the listing and the commit scripts: `scan` visits the live records (in the index, not expired at
 * `now`) of a ZRANGEBYLEX range in order, up to `limit`, and stops early when `visit` returns false (then -1).
 */
const SCAN = `
local function scan(start, stop, limit, now, visit)
  local n = 0
  while n < limit do
    local want = limit - n
    if want < 64 then want = 64 end
    local keys = redis.call('ZRANGEBYLEX', KEYS[3], start, stop, 'LIMIT', 0, want)
    for k = 1, #keys do
      local key = keys[k]
      local exp = redis.call('ZSCORE', KEYS[4], key)
      if (not exp) or tonumber(exp) > now then
        local raw = redis.call('HGET', KEYS[2], key)
        if raw then
          n = n + 1
          if not visit(n, key, raw) then return -1 end
          if n >= limit then return n end
        end
      end
    end
    if #keys < want then return n end
    start = '(' .. keys[#keys]
  end
  return n
end`;

/**
 * A consistent listing: live records (not tombstones, not expired) of a lexicographic range, the revision and the
 * board's epoch. ARGV: start (`-`, `[lo` or `(after`), stop (`(hi`), limit, now, then what is held (see HELD) of
 * the range. Returns `{revision, epoch, key, record|revision, key, record|revision…}`.
 */
export const LIST = `${HELD}${SCAN}
local held, epoch = heldOf(5)
local out = {redis.call('GET', KEYS[1]) or '0', epoch}
scan(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), function(_, key, raw)
  out[#out + 1] = key
  out[#out + 1] = sized(held, key, raw)
  return true
end)
return out`;

/**
 * A commit. Checks the read set — the revision of each record read (0 = absent), and each listing, run again with
 * the same bounds, limit and time, still giving the same keys at the same revisions — and, when nothing changed,
 * bumps the revision, appends the logged writes to the stream, applies the writes and trims the stream to its
 * bound. Returns `{1, revision}`, or `{0, revision}` on a conflict (nothing written).
 *
 * A write names its marker key as KEYS[8]: the script applies nothing when the marker already exists (a lookup fenced
 * it: `{2, revision}`), and sets it to the revision, expiring after ARGV[5] ms, atomically with the writes. It names
 * the turn key as KEYS[9]: while another transaction's token is there, the write is refused as a conflict; when its
 * own token (ARGV[6]) is there, the script deletes it with the writes. A commit that only checks ignores the turn.
 *
 * ARGV: now, maxLogEntries, readCount, listCount, markerTtlMs, turn token, (key, rev)×readCount,
 * (start, stop, limit, now, rowCount, (key, rev)×rowCount)×listCount, then per write:
 * key, body (the record's JSON text without its leading `{`; empty = remove), exp (empty = none),
 * tombstone time (empty = not a tombstone), log value (empty = not logged).
 */
export const COMMIT = `${REV_OF}${SCAN}
local rev = tonumber(redis.call('GET', KEYS[1]) or '0')
if KEYS[8] and redis.call('EXISTS', KEYS[8]) == 1 then return {2, rev} end
local i = 7
for _ = 1, tonumber(ARGV[3]) do
  if revOf(redis.call('HGET', KEYS[2], ARGV[i])) ~= tonumber(ARGV[i + 1]) then return {0, rev} end
  i = i + 2
end
for _ = 1, tonumber(ARGV[4]) do
  local count = tonumber(ARGV[i + 4])
  local base = i + 5
  local n = scan(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), function(n, key, raw)
    local j = base + 2 * (n - 1)
    return n <= count and ARGV[j] == key and tonumber(ARGV[j + 1]) == revOf(raw)
  end)
  if n ~= count then return {0, rev} end
  i = base + 2 * count
end
if i > #ARGV then return {1, rev} end
if KEYS[9] then
  local turn = redis.call('GET', KEYS[9])
  if turn and turn ~= ARGV[6] then return {0, rev} end
  if turn then redis.call('DEL', KEYS[9]) end
end
rev = redis.call('INCR', KEYS[1])
if KEYS[8] then redis.call('SET', KEYS[8], rev, 'PX', ARGV[5]) end
local at = ARGV[1]
local seq = 0
local batch = {}
local function flush()
  if #batch == 0 then return nil end
  local ok = redis.pcall('XADD', KEYS[6], rev .. '-' .. seq, '', at, unpack(batch))
  seq = seq + 1
  batch = {}
  if type(ok) == 'table' and ok.err then return ok end
  return nil
end
for j = i, #ARGV, 5 do
  if ARGV[j + 4] ~= '' then
    batch[#batch + 1] = ARGV[j]
    batch[#batch + 1] = ARGV[j + 4]
    if #batch >= ${LOG_CHUNK * 2} then
      local failed = flush()
      if failed then return failed end
    end
  end
end
local failed = flush()
if failed then return failed end
for j = i, #ARGV, 5 do
  local key, body, exp, tomb = ARGV[j], ARGV[j + 1], ARGV[j + 2], ARGV[j + 3]
  if body == '' then
    redis.call('HDEL', KEYS[2], key)
    redis.call('ZREM', KEYS[3], key)
    redis.call('ZREM', KEYS[4], key)
    redis.call('ZREM', KEYS[5], key)
  else
    redis.call('HSET', KEYS[2], key, '{"rev":' .. rev .. ',' .. body)
    if tomb == '' then
      redis.call('ZADD', KEYS[3], 0, key)
      redis.call('ZREM', KEYS[5], key)
    else
      redis.call('ZREM', KEYS[3], key)
      redis.call('ZADD', KEYS[5], tomb, key)
    end
    if exp == '' then redis.call('ZREM', KEYS[4], key) else redis.call('ZADD', KEYS[4], exp, key) end
  end
end
local maxLog = tonumber(ARGV[2])
if seq > 0 and maxLog > 0 then
  local len = redis.call('XLEN', KEYS[6])
  if len > maxLog + 100 then
    local old = redis.call('XRANGE', KEYS[6], '-', '+', 'COUNT', len - maxLog)
    local last = tonumber(string.match(old[#old][1], '^(%d+)'))
    if last >= rev then last = rev - 1 end
    redis.call('XTRIM', KEYS[6], 'MINID', (last + 1) .. '-0')
    if last > tonumber(redis.call('GET', KEYS[7]) or '0') then redis.call('SET', KEYS[7], last) end
  end
end
return {1, rev}`;

/**
 * The change log after a revision. ARGV: start id (inclusive, or `(id` exclusive), count.
 * Returns `{revision, compacted, entries}` with entries as XRANGE gives them.
 */
export const CHANGES = `
return {redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[7]) or '0',
  redis.call('XRANGE', KEYS[6], ARGV[1], '+', 'COUNT', ARGV[2])}`;

/**
 * Prunes the oldest log entries committed at or before ARGV[1] (ms), at most ARGV[2] entries, and raises
 * `compacted`. Returns how many logged writes were removed.
 */
export const PRUNE = `
local before = tonumber(ARGV[1])
local entries = redis.call('XRANGE', KEYS[6], '-', '+', 'COUNT', ARGV[2])
local lastId, lastRev, rows = nil, 0, 0
for _, e in ipairs(entries) do
  local f = e[2]
  if f[1] ~= '' or tonumber(f[2]) > before then break end
  lastId = e[1]
  lastRev = tonumber(string.match(lastId, '^(%d+)'))
  rows = rows + (#f - 2) / 2
end
if not lastId then return 0 end
local seq = tonumber(string.match(lastId, '-(%d+)$'))
redis.call('XTRIM', KEYS[6], 'MINID', lastRev .. '-' .. (seq + 1))
if lastRev > tonumber(redis.call('GET', KEYS[7]) or '0') then redis.call('SET', KEYS[7], lastRev) end
return rows`;

/**
 * What became of a write whose reply was lost: its marker (KEYS[8]) holds its revision if it applied; if there is
 * none, a fence is set in its place (expiring after ARGV[1] ms), so that a commit script still on its way can no
 * longer apply. Returns the revision, or `fenced`.
 */
export const RESOLVE = `
local found = redis.call('GET', KEYS[8])
if found then return found end
redis.call('SET', KEYS[8], 'fenced', 'PX', ARGV[1])
return 'fenced'`;

/**
 * The turn (KEYS[8]) for the transaction with token ARGV[1]: ARGV[2] `take` sets it when free (or renews it when it is
 * this token's), `renew` sets its expiry again, both to ARGV[3] ms; `release` deletes it. Each acts only on a turn that
 * is free or this token's; returns 1 when it did, 0 when another transaction holds the turn (or none does, to renew).
 */
export const TURN = `
local held = redis.call('GET', KEYS[8])
if ARGV[2] == 'take' and not held then
  redis.call('SET', KEYS[8], ARGV[1], 'PX', ARGV[3])
  return 1
end
if held ~= ARGV[1] then return 0 end
if ARGV[2] == 'release' then redis.call('DEL', KEYS[8]) else redis.call('PEXPIRE', KEYS[8], ARGV[3]) end
return 1`;

/** Where the follower stands: `{revision, compacted}`. */
export const POSITION = `
return {redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[7]) or '0'}`;

export const SCRIPTS = { BEGIN, READ, LIST, COMMIT, CHANGES, PRUNE, POSITION, RESOLVE, TURN } as const;
export type ScriptName = keyof typeof SCRIPTS;
