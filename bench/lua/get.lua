dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- GET with optional headers from the environment: BENCH_COOKIE, BENCH_BEARER, BENCH_LANGUAGE
-- (Accept-Language, as a browser set to that language sends it); a rotating
-- X-Forwarded-For so that per-client limits (realip) never trigger.
local cookie = os.getenv("BENCH_COOKIE")
local bearer = os.getenv("BENCH_BEARER")
local language = os.getenv("BENCH_LANGUAGE")
local n = 0
request = function()
  n = n + 1
  local h = { ["X-Forwarded-For"] = "10." .. (n % 250) .. "." .. (math.floor(n / 250) % 250) .. ".1" }
  if cookie then h["Cookie"] = cookie end
  if bearer then h["Authorization"] = "Bearer " .. bearer end
  if language then h["Accept-Language"] = language .. ";q=1, en;q=0.5" end
  return wrk.format("GET", nil, h)
end
