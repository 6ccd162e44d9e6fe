dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
-- POST /auth/session or /auth/token, each request with a fresh token prepared before the run
-- (BENCH_TOKENS: a file with one token a line). Thread i takes tokens i, i+T, i+2T, ... (1-based);
-- at the end each thread's next index is reported ("next"), so that bench/run knows which tokens
-- are still unspent and uses them in the next run instead of preparing more.
local tokens = {}
for line in io.lines(os.getenv("BENCH_TOKENS")) do tokens[#tokens + 1] = line end
local threads = tonumber(os.getenv("BENCH_THREADS"))
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
  local t = tokens[next_index] or "exhausted-token"
  next_index = next_index + threads
  local h = { ["Content-Type"] = "application/json", ["Origin"] = os.getenv("BENCH_ORIGIN"),
              ["X-Forwarded-For"] = "10." .. (next_index % 250) .. "." .. (math.floor(next_index / 250) % 250) .. ".3" }
  return wrk.format("POST", nil, h, '{"token":"' .. t .. '"}')
end
function bench_extra()
  local next = {}
  for k, thread in ipairs(started) do
    next[k] = tostring(thread:get("next_index") or (k))
  end
  return ',"next":[' .. table.concat(next, ",") .. ']'
end
