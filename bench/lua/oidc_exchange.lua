dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- POST /auth/oauth2/token: each request spends a fresh code (BENCH_TOKENS: a file with one code a
-- line, made by codes.lua) with the public client's PKCE verifier (BENCH_VERIFIER): the code is
-- spent, an access token and a signed ID token are written and answered, durable before the 200.
-- Thread i takes codes i, i+T, i+2T, ... (1-based); each thread's next index is reported ("next"),
-- as exchange.lua does, so that unspent codes are used in the next run.
local codes = {}
for line in io.lines(os.getenv("BENCH_TOKENS")) do codes[#codes + 1] = line end
local threads = tonumber(os.getenv("BENCH_THREADS"))
local verifier = os.getenv("BENCH_VERIFIER")
local redirect = os.getenv("BENCH_REDIRECT")
local counter = 0
local started = {}
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  started[#started + 1] = thread
end
next_index = nil  -- global: read through thread:get after the run
request = function()
  if next_index == nil then next_index = tid + 1 end
  local c = codes[next_index] or "exhausted-code"
  next_index = next_index + threads
  local h = { ["Content-Type"] = "application/x-www-form-urlencoded",
              ["X-Forwarded-For"] = "10." .. (next_index % 250) .. "." .. (math.floor(next_index / 250) % 250) .. ".6" }
  return wrk.format("POST", nil, h, "grant_type=authorization_code&client_id=bench&code=" .. c ..
                    "&redirect_uri=" .. redirect .. "&code_verifier=" .. verifier)
end
function bench_extra()
  local next = {}
  for k, thread in ipairs(started) do
    next[k] = tostring(thread:get("next_index") or (k))
  end
  return ',"next":[' .. table.concat(next, ",") .. ']'
end
