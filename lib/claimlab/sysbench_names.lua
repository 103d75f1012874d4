-- claimlab's wrapper around a bundled sysbench test: sysbench has no option for the connection
-- charset, so every connection the test opens runs `SET NAMES <charset> [COLLATE <collation>]`
-- right after connecting, before it prepares statements.
-- CLAIMLAB_SET_NAMES: the SET NAMES argument (validated by claimlab); CLAIMLAB_SYSBENCH_TEST: the
-- bundled test's .lua path.
local names = os.getenv("CLAIMLAB_SET_NAMES")
local test = os.getenv("CLAIMLAB_SYSBENCH_TEST")
local real_driver = sysbench.sql.driver

if names ~= nil and names ~= "" then
  sysbench.sql.driver = function(...)
    local drv = real_driver(...)
    local proxy = {}
    function proxy:connect()
      local con = drv:connect()
      con:query("SET NAMES " .. names)
      return con
    end
    function proxy:name() return drv:name() end
    return proxy
  end
end

dofile(test)
