dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- POST /auth/session or /auth/token, each request with a fresh token prepared before the run
-- (BENCH_TOKENS: a file with one token a line). Thread i takes tokens i, i+T, i+2T, ...
local tokens = {}
for line in io.lines(os.getenv("BENCH_TOKENS")) do tokens[#tokens + 1] = line end
local threads = tonumber(os.getenv("BENCH_THREADS"))
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
local i = nil
request = function()
  if i == nil then i = tid + 1 end
  local t = tokens[i] or "exhausted-token"
  i = i + threads
  local h = { ["Content-Type"] = "application/json", ["Origin"] = os.getenv("BENCH_ORIGIN"),
              ["X-Forwarded-For"] = "10." .. (i % 250) .. "." .. (math.floor(i / 250) % 250) .. ".3" }
  return wrk.format("POST", nil, h, '{"token":"' .. t .. '"}')
end
