dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- POST /auth/login for one registered address: with signin_token_resend 0 every request issues a
-- token (durable write) and starts a delivery subrequest. BENCH_LANGUAGE: the Accept-Language the
-- request sends (its email is written in that language).
local language = os.getenv("BENCH_LANGUAGE")
local n = 0
request = function()
  n = n + 1
  local h = { ["Content-Type"] = "application/json",
              ["X-Forwarded-For"] = "10." .. (n % 250) .. "." .. (math.floor(n / 250) % 250) .. ".2" }
  if language then h["Accept-Language"] = language end
  return wrk.format("POST", nil, h, '{"email":"' .. os.getenv("BENCH_EMAIL") .. '"}')
end
