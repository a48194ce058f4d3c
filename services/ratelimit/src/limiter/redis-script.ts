/**
 * The sliding windows of limiter/sliding-windows.ts, run inside Redis (or
 * Valkey) as one script: every group of one workspace that a call carries is
 * read, decided and written in one EVALSHA, so checks of any replica never
 * interleave within it, and a group is counted all or nothing exactly as the
 * memory limiter counts it (same formula, same rounding, same order).
 *
 * KEYS[1]   the workspace's set of counters (score: when the counter ends);
 * KEYS[2..] one counter per check, in order: a hash {s: window sequence, c: current, p: previous}.
 * ARGV      now (unix ms, or -1 for this server's clock), the workspace's bound on counters,
 *           then per group: its number of checks n, and n × (limit, duration, cost).
 * Answers   {now, then per check: code (1 passed, 0 denied, 2 denied for want of room), remaining}.
 *
 * A counter expires on its own (PEXPIRE) when both its windows have ended,
 * measured from `now`, so a clock given by the caller (tests) ages keys at
 * Redis's pace from that point. The workspace's set holds one member per live
 * counter; ended ones are dropped from it before a new counter is counted
 * against the bound, as the memory limiter drops its ended counters first.
 */
export const SLIDING_WINDOWS_LUA = `
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local bound = tonumber(ARGV[2])
local set = KEYS[1]
local skip = #set + 1
local out = { now }
local held = -1
local a, k = 3, 2
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  a = a + 1
  local checks = {}
  local pending = {}
  local claimed = {}
  local claims = 0
  local all = true
  for i = 1, n do
    local key = KEYS[k]
    k = k + 1
    local limit, dur, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    a = a + 3
    local seq = math.floor(now / dur)
    local start = seq * dur
    local h = redis.call('HMGET', key, 's', 'c', 'p')
    local cur, prev = 0, 0
    if h[1] then
      local s = tonumber(h[1])
      if s >= seq then
        cur, prev = tonumber(h[2]), tonumber(h[3])
      elseif s == seq - 1 then
        prev = tonumber(h[2])
      end
    end
    local already = pending[key] or 0
    local effective = cur + already + math.floor(prev * (1 - (now - start) / dur)) + cost
    local code = 0
    if limit > 0 and effective <= limit then code = 1 end
    if code == 1 and not h[1] and cost > 0 and not claimed[key] then
      if held < 0 then
        redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
        held = redis.call('ZCARD', set)
      end
      if held + claims >= bound then
        code = 2
      else
        claims = claims + 1
        claimed[key] = true
      end
    end
    if code ~= 1 then all = false end
    out[#out + 1] = code
    if code == 1 then out[#out + 1] = math.max(0, limit - effective) else out[#out + 1] = 0 end
    pending[key] = already + cost
    checks[i] = { key, seq, dur, cost }
  end
  if all then
    for i = 1, n do
      local key, seq, dur, cost = checks[i][1], checks[i][2], checks[i][3], checks[i][4]
      if cost > 0 then
        local h = redis.call('HMGET', key, 's', 'c')
        local s = tonumber(h[1])
        if s and s >= seq then
          redis.call('HINCRBY', key, 'c', cost)
        else
          local p = 0
          if s == seq - 1 then p = tonumber(h[2]) end
          local ends = (seq + 2) * dur
          redis.call('HSET', key, 's', seq, 'c', cost, 'p', p)
          redis.call('PEXPIRE', key, ends - now)
          redis.call('ZADD', set, ends, string.sub(key, skip))
          if redis.call('PTTL', set) < ends - now then redis.call('PEXPIRE', set, ends - now) end
        end
      end
    end
    if held >= 0 then held = held + claims end
  end
end
return out
`;
