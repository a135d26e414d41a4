-- The login flow (harness/flows.py) in wrk's Lua, loading report.lua beside it (whose done() reports).
-- wrk hands a thread's connections to request() in turn and calls it on a connection again only once that
-- connection's response is in: so the first request of each connection is a login (one per VU), and every later
-- one a GET carrying the thread's newest token, read from a login's JSON answer in response(). With
-- relogin_every N, a thread sends a login after every N GETs. wrk has no per-connection state in Lua: a GET
-- carries the token its thread last got, not necessarily its own connection's.
-- init(args): login path, login body, content type, token field, GET path, token header, relogin_every (0: none),
-- connections of this thread (wrk gives each of its -t threads -c / -t connections).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "report.lua")   -- its done() reports, as without a flow

local login_request, get_path, token_header, token_pattern
local logins_left, relogin_every, since_login, token = 0, 0, 0, nil

init = function(args)
  login_request = wrk.format("POST", args[1], {["Content-Type"] = args[3]}, args[2])
  token_pattern = '"' .. args[4] .. '"%s*:%s*"([^"]+)"'
  get_path, token_header = args[5], args[6]
  relogin_every, logins_left = tonumber(args[7]), tonumber(args[8])
end

request = function()
  if logins_left > 0 or token == nil then
    logins_left = math.max(logins_left - 1, 0)
    return login_request
  end
  if relogin_every > 0 and since_login >= relogin_every then
    since_login = 0
    return login_request
  end
  since_login = since_login + 1
  return wrk.format("GET", get_path, {[token_header] = token})
end

response = function(status, headers, body)
  local found = body and string.match(body, token_pattern)
  if found then token = found end
end
