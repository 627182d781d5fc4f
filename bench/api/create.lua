-- create.lua: jobs.create with a new job id per request, for as long as wrk runs.
--   wrk -t T -c C -d SECONDS -s create.lua URL -- PROJECT TAG
-- Ids are TAG_t_n (thread t, its n-th request), so runs with different TAGs never collide.
local tid_counter = 0

function setup(thread)
  tid_counter = tid_counter + 1
  thread:set("tid", tid_counter)
end

local path, tag
local n = 0
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  path = "/v1/projects/" .. args[1] .. "/jobs"
  tag = args[2]
end

function request()
  n = n + 1
  local body = '{"jobId":"' .. tag .. "_" .. tid .. "_" .. n .. '","trainingInput":{' ..
    '"scaleTier":"CUSTOM","masterType":"n1-standard-4","masterConfig":{' ..
    '"imageUri":"example.com/bench:1","containerCommand":["true"]},"region":"local"},' ..
    '"labels":{"bench":"api"}}'
  return wrk.format("POST", path, headers, body)
end

dofile((debug.getinfo(1, "S").source:sub(2):match("^(.*/)") or "./") .. "report.lua")
