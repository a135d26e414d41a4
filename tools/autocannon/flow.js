// The login flow (harness/flows.py, issue 37) with autocannon's programmatic API, on the pinned Node:
//   node flow.js <autocannon module folder> <options JSON>
// The options (adapter.py) are autocannon's own (url, connections, duration, timeout, pipelining 1, json: true, so
// autocannon prints the same one-line JSON result as the CLI's --json) plus `flow`: the login's method, path, body
// (sent as is) and content type, the token's field, the GET's path, the token's header, reloginEvery (0: never).
//
// autocannon's idiom for a sequence is its `requests` array: each connection cycles through it, setupRequest()
// builds a request and onResponse() sees its answer. Its `context` cannot hold the token: autocannon resets it to
// initialContext whenever a connection wraps around the array, and a log-in-once flow never comes back to the
// login. So setupClient(), called once for each connection, gives it its own state and its own one-entry
// `requests`, whose setupRequest() builds a login when the connection has no token yet (or after reloginEvery
// GETs), else a GET with the token, and whose onResponse() keeps the token from the login's JSON answer.
// With pipelining 1 a connection's requests are strictly one after another, so the state always belongs to the
// request just answered.
'use strict';

const autocannon = require(process.argv[2]);
const options = JSON.parse(process.argv[3]);
const flow = options.flow;
delete options.flow;

function setupClient (client) {
  const vu = { token: null, getsSinceLogin: 0, step: null };
  client.setRequests([{
    setupRequest (request) {
      if (vu.token === null || (flow.reloginEvery > 0 && vu.getsSinceLogin >= flow.reloginEvery)) {
        vu.step = 'login';
        vu.getsSinceLogin = 0;
        return { ...request, method: flow.loginMethod, path: flow.loginPath, body: flow.loginBody,
          headers: { ...request.headers, 'Content-Type': flow.loginContentType } };
      }
      vu.step = 'get';
      vu.getsSinceLogin += 1;
      return { ...request, method: 'GET', path: flow.getPath, body: undefined,
        headers: { ...request.headers, [flow.tokenHeader]: vu.token } };
    },
    onResponse (status, body) {
      if (vu.step !== 'login') return;
      let token = null;
      try {
        token = status === 200 ? JSON.parse(body)[flow.tokenField] : null;
      } catch (e) {
        token = null;    // not JSON: no token; the connection logs in again (the API counts it)
      }
      vu.token = typeof token === 'string' && token !== '' ? token : null;
    },
  }]);
}

autocannon({ ...options, setupClient }, (err) => {
  if (err) {
    console.error(err.message || err);
    process.exitCode = 1;
  }
});
