/**
 * The sliding windows of limiter/sliding-windows.ts, run inside Redis (or
 * Valkey) as one script: every group of one workspace that a call carries is
 * read, decided and written in one EVALSHA, so checks of any replica never
 * interleave within it, and a group is counted all or nothing exactly as the
 * memory limiter counts it (same formula, same rounding, same order).
 *
 * KEYS[1]   the workspace's set of live counters, `<tag>:live` (member: the counter's digest, the part
 *           of its key after the tag; score: when the counter ends);
 * KEYS[2..] each counter the call names, once, `<tag><digest>`: a hash {s: window sequence, c: current,
 *           p: previous}.
 * ARGV      now (unix ms, or -1 for this server's clock), the workspace's bound on counters,
 *           then per group: its number of checks n, and n × (key index in KEYS, limit, duration, cost);
 *           or -r and one check: r groups in a row of that one check (a coalesced batch of one
 *           hot identifier), each decided and counted in turn as if sent r times.
 * Answers   {now, then per check: code (1 passed, 0 denied, 2 denied for want of room), remaining}.
 *
 * Each counter is read once per call and written once at its end, whatever
 * the number of checks naming it (a coalesced batch names one hot counter
 * many times); in between the script keeps it in a table, exactly as the
 * memory limiter keeps its entry. A counter expires on its own (PEXPIRE) when
 * both its windows have ended, measured from `now`, so a clock given by the
 * caller (tests) ages keys at Redis's pace from that point. The workspace's
 * set holds one member per live counter; ended ones are dropped from it before
 * a new counter is counted against the bound, as the memory limiter drops its
 * ended counters first. A group of one check (every item of a LimitBatch) is
 * decided by `lone`, the same decision without a group's tables, and a run of
 * one by `run`, as arithmetic once the counter holds the window, which is most
 * of a batch under load (the figures: docs/performance.md, Counters in Redis).
 */
export const SLIDING_WINDOWS_LUA = `
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local bound = tonumber(ARGV[2])
local set = KEYS[1]
-- A counter's key is the tag (the set's key without ':live') and its digest; the set holds the digest.
local skip = #set - 4
local out = { now }
local held = -1
local counters = {}
local function counter(k)
  local e = counters[k]
  if e == nil then
    local h = redis.call('HMGET', KEYS[k], 's', 'c', 'p')
    if h[1] then
      e = { s = tonumber(h[1]), c = tonumber(h[2]), p = tonumber(h[3]), held = true }
    else
      e = { held = false }
    end
    counters[k] = e
  end
  return e
end
local o = 1
-- Room for a new counter of this workspace: the live counters it holds, read once per call.
local function room(claims)
  if held < 0 then
    redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
    held = redis.call('ZCARD', set)
  end
  return held + claims < bound
end
local function count(e, seq, dur, cost)
  if e.held and e.s >= seq then
    e.c = e.c + cost
  else
    if e.held and e.s == seq - 1 then e.p = e.c else e.p = 0 end
    e.s, e.c, e.held, e.ends = seq, cost, true, (seq + 2) * dur
  end
  e.dirty = true
end
-- The window of length dur that now falls in, and what the counter holds of it: this window's count and
-- the share of the one before that still slides into it.
local function window(e, dur)
  local seq = math.floor(now / dur)
  local cur, prev = 0, 0
  if e.held then
    if e.s >= seq then
      cur, prev = e.c, e.p
    elseif e.s == seq - 1 then
      prev = e.c
    end
  end
  return seq, cur + math.floor(prev * (1 - (now - seq * dur) / dur))
end
-- A group of one check (every check of a LimitBatch): the same decision as below, without its tables.
local function lone(k, limit, dur, cost)
  local e = counter(k)
  local seq, used = window(e, dur)
  local effective = used + cost
  local code = 0
  if limit > 0 and effective <= limit then code = 1 end
  if code == 1 and not e.held and cost > 0 then
    if room(0) then held = held + 1 else code = 2 end
  end
  o = o + 1
  out[o] = code
  o = o + 1
  if code == 1 then
    out[o] = math.max(0, limit - effective)
    if cost > 0 then count(e, seq, dur, cost) end
  else
    out[o] = 0
  end
end
-- r groups in a row of the same lone check: once the counter holds this window, each further check is
-- the same decision on a count that grows by the cost of each one that passes.
local function run(r, k, limit, dur, cost)
  lone(k, limit, dur, cost)
  local e = counters[k]
  local seq = math.floor(now / dur)
  if not (e.held and e.s >= seq) then
    for _ = 2, r do lone(k, limit, dur, cost) end
    return
  end
  local decayed = math.floor(e.p * (1 - (now - seq * dur) / dur))
  for _ = 2, r do
    local effective = e.c + decayed + cost
    o = o + 1
    if limit > 0 and effective <= limit then
      out[o] = 1
      o = o + 1
      out[o] = math.max(0, limit - effective)
      if cost > 0 then
        e.c = e.c + cost
        e.dirty = true
      end
    else
      out[o] = 0
      o = o + 1
      out[o] = 0
    end
  end
end
local a = 3
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  a = a + 1
  if n < 0 then
    local k, limit, dur, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    a = a + 4
    run(-n, k, limit, dur, cost)
  elseif n == 1 then
    lone(tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]))
    a = a + 4
  else
    local checks = {}
    local pending = {}
    local claimed = {}
    local claims = 0
    local all = true
    for i = 1, n do
      local k, limit, dur, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
      a = a + 4
      local e = counter(k)
      local seq, used = window(e, dur)
      local already = pending[k] or 0
      local effective = used + already + cost
      local code = 0
      if limit > 0 and effective <= limit then code = 1 end
      -- A new counter needs room, once per group however often the group names it.
      if code == 1 and not e.held and cost > 0 and not claimed[k] then
        if room(claims) then
          claims = claims + 1
          claimed[k] = true
        else
          code = 2
        end
      end
      if code ~= 1 then all = false end
      o = o + 1
      out[o] = code
      o = o + 1
      if code == 1 then out[o] = math.max(0, limit - effective) else out[o] = 0 end
      pending[k] = already + cost
      checks[i] = { k, seq, dur, cost }
    end
    if all then
      for i = 1, n do
        local c = checks[i]
        if c[4] > 0 then count(counters[c[1]], c[2], c[3], c[4]) end
      end
      if held >= 0 then held = held + claims end
    end
  end
end
local last = 0
for k, e in pairs(counters) do
  if e.dirty then
    redis.call('HSET', KEYS[k], 's', e.s, 'c', e.c, 'p', e.p)
    if e.ends then
      redis.call('PEXPIRE', KEYS[k], e.ends - now)
      redis.call('ZADD', set, e.ends, string.sub(KEYS[k], skip))
      if e.ends > last then last = e.ends end
    end
  end
end
if last > 0 and redis.call('PTTL', set) < last - now then redis.call('PEXPIRE', set, last - now) end
return out
`;
