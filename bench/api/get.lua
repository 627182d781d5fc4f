-- get.lua: jobs.get of a random job among job_1..job_N, for as long as wrk runs.
--   wrk -t T -c C -d SECONDS --latency -s get.lua URL -- PROJECT N
-- The requests are formatted once in init() so that Lua does not limit the rate.
local tid_counter = 0

function setup(thread)
  tid_counter = tid_counter + 1
  thread:set("tid", tid_counter)
end

local reqs, count = {}, 0

function init(args)
  count = tonumber(args[2])
  math.randomseed(os.time() * 100 + (tid or 0))
  for i = 1, count do
    reqs[i] = wrk.format("GET", "/v1/projects/" .. args[1] .. "/jobs/job_" .. i)
  end
end

function request()
  return reqs[math.random(count)]
end

dofile((debug.getinfo(1, "S").source:sub(2):match("^(.*/)") or "./") .. "report.lua")
