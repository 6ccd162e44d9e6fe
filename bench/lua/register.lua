dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- POST /auth/register for a fresh address each request (BENCH_TAG: unique per run): every request
-- issues a registration token (durable write) and delivers it, so the delivery log collects
-- tokens for the exchange scenarios. Prepares tokens between timed runs; never timed itself.
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
local n = 0
request = function()
  n = n + 1
  local h = { ["Content-Type"] = "application/json",
              ["X-Forwarded-For"] = "10." .. (n % 250) .. "." .. (math.floor(n / 250) % 250) .. ".4" }
  return wrk.format("POST", nil, h, '{"email":"u' .. n .. '-' .. tid .. '-' .. os.getenv("BENCH_TAG") .. '@bench.example"}')
end
