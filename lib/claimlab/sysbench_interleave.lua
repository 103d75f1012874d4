-- claimlab's interleaving wrapper around a bundled sysbench test: one sysbench process measures
-- several levels (schema and connection charset) of one server at once. Every thread opens one
-- connection per level and runs its transactions on the levels in turn, in a fresh random order
-- each cycle, timing each transaction; so every level sees the same machine state, millisecond by
-- millisecond, and the machine's speed changes cancel out of the levels' ratios.
-- CLAIMLAB_LEVELS: "label|schema|set_names" entries joined by ";" (validated by claimlab);
-- CLAIMLAB_SYSBENCH_TEST: the bundled test's .lua path.
-- Each thread prints, when it ends, one line per level:
--   claimlab-level <label> <transactions> <seconds spent in them>
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } claimlab_timespec_t;
int clock_gettime(int clk_id, claimlab_timespec_t *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("claimlab_timespec_t")
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local levels = {}
for entry in string.gmatch(os.getenv("CLAIMLAB_LEVELS") or "", "[^;]+") do
  local label, schema, names = string.match(entry, "^([^|]+)|([^|]+)|([^|]*)$")
  assert(label, "claimlab: bad CLAIMLAB_LEVELS entry " .. entry)
  levels[#levels + 1] = {label = label, schema = schema, names = names}
end
assert(#levels > 0, "claimlab: CLAIMLAB_LEVELS is empty")

local connecting   -- the level whose connection the next drv:connect() opens
local real_driver = sysbench.sql.driver
sysbench.sql.driver = function(...)
  local drv = real_driver(...)
  local proxy = {}
  function proxy:connect()
    local con = drv:connect()
    if connecting ~= nil then
      con:query("USE `" .. connecting.schema .. "`")
      if connecting.names ~= "" then
        con:query("SET NAMES " .. connecting.names)
      end
    end
    return con
  end
  function proxy:name() return drv:name() end
  return proxy
end

dofile(os.getenv("CLAIMLAB_SYSBENCH_TEST"))

local real_thread_init, real_event, real_thread_done = thread_init, event, thread_done
local sides, order, position

function thread_init()
  sides = {}
  for i, level in ipairs(levels) do
    connecting = level
    real_thread_init()          -- sets the globals con, stmt, param for this level
    sides[i] = {con = con, stmt = stmt, param = param, n = 0, t = 0.0}
  end
  connecting = nil
  order, position = {}, #levels
  for i = 1, #levels do order[i] = i end
end

local function next_side()
  position = position + 1
  if position > #order then     -- a new cycle: Fisher-Yates with sysbench's seeded generator
    for i = #order, 2, -1 do
      local j = sysbench.rand.uniform(1, i)
      order[i], order[j] = order[j], order[i]
    end
    position = 1
  end
  return sides[order[position]]
end

-- A transaction that fails with an error sysbench ignores (a deadlock) is run again by sysbench:
-- the retry stays on the same level, and the failed attempt's time counts for it.
local pending, started

function event()
  local side = pending or next_side()
  if pending == nil then
    pending, started = side, now()
  end
  con, stmt, param = side.con, side.stmt, side.param
  real_event()
  side.t = side.t + (now() - started)
  side.n = side.n + 1
  pending = nil
end

function thread_done()
  for i, side in ipairs(sides) do
    io.stdout:write(string.format("claimlab-level %s %d %.6f\n", levels[i].label, side.n, side.t))
    con, stmt, param = side.con, side.stmt, side.param
    real_thread_done()
  end
  io.stdout:flush()
end
