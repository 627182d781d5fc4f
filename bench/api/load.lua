-- load.lua: create exactly N jobs job_1..job_N in one project through jobs.create.
--   wrk -t T -c C -d 300s -s load.lua URL -- PROJECT N T MARKER_DIR
-- Thread t creates the ids t, t+T, t+2T, ...; once all its creates are answered it writes
-- MARKER_DIR/done.t ("created failed") and stops. Connections whose thread has run out of
-- ids meanwhile ask GET /healthz. wrk itself runs until run.sh sends it SIGINT.
-- The first request() of a thread is a /healthz too: wrk calls request() of its first thread
-- once to check the script, and drops what it returns.
local tid_counter = 0

function setup(thread)
  tid_counter = tid_counter + 1
  thread:set("tid", tid_counter)
end

local project, total, nthreads, markers, quota
local issued, answered, failed, finished = 0, 0, 0, false
local first = true
local headers = { ["Content-Type"] = "application/json" }
local health

function init(args)
  project, total, nthreads, markers = args[1], tonumber(args[2]), tonumber(args[3]), args[4]
  quota = math.floor((total - tid) / nthreads) + 1
  if tid > total then quota = 0 end
  health = wrk.format("GET", "/healthz")
end

function request()
  if first then
    first = false
    return health
  end
  if issued < quota then
    issued = issued + 1
    local id = "job_" .. (tid + nthreads * (issued - 1))
    local body = '{"jobId":"' .. id .. '","trainingInput":{"scaleTier":"CUSTOM",' ..
      '"masterType":"n1-standard-4","masterConfig":{"imageUri":"example.com/bench:1",' ..
      '"containerCommand":["true"]},"region":"local"},"labels":{"bench":"api"}}'
    return wrk.format("POST", "/v1/projects/" .. project .. "/jobs", headers, body)
  end
  return health
end

function response(status, hdrs, body)
  if status == 200 and body:find('"jobId"', 1, true) then
    answered = answered + 1
  elseif status ~= 200 then
    answered = answered + 1
    failed = failed + 1
    if failed <= 3 then io.stderr:write("load.lua: create failed: " .. status .. " " .. body .. "\n") end
  end
  if answered >= quota and not finished then
    finished = true
    local f = io.open(markers .. "/done." .. tid, "w")
    f:write((answered - failed) .. " " .. failed .. "\n")
    f:close()
    wrk.thread:stop()
  end
end
