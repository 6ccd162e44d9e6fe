dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- GET /auth/oauth2/authorize (the URL given to wrk, its query the bench client's request with a
-- fixed PKCE challenge) as the signed-in person of BENCH_COOKIE: every request writes a code
-- (durable) and answers a redirect that carries it. Each thread appends the codes it got to
-- BENCH_CODES-<thread>, one a line, for the code exchange run. Prepares codes between timed
-- runs; never timed itself.
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
local out = nil
local n = 0
request = function()
  n = n + 1
  local h = { ["Cookie"] = os.getenv("BENCH_COOKIE"),
              ["X-Forwarded-For"] = "10." .. (n % 250) .. "." .. (math.floor(n / 250) % 250) .. ".5" }
  return wrk.format("GET", nil, h)
end
response = function(status, headers, body)
  local code = (headers["Location"] or headers["location"] or ""):match("[?&]code=([^&]+)")
  if code then
    if out == nil then
      out = io.open(os.getenv("BENCH_CODES") .. "-" .. tid, "a")
      out:setvbuf("line")
    end
    out:write(code, "\n")
  end
end
