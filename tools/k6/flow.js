// The login flow (harness/flows.py, issue 37) in k6's own idiom: each VU is one JS runtime, so the token lives in
// the VU's global scope and survives its iterations. An iteration is one request, as in script.js: the VU's first
// one logs in (POST the JSON credentials, read the token from the JSON answer with res.json()), every later one
// GETs the API with the token in the header; with LTH_RELOGIN_EVERY=N the VU logs in again after every N GETs.
// Each request is tagged (name: login / api_get) and the two thresholds below, which never fail (no expressions),
// make k6 keep each tag's http_req_duration apart in its end-of-test summary (--summary-export): the per-step
// latencies. Everything comes from -e (adapter.py): LTH_BASE, LTH_LOGIN_METHOD, LTH_LOGIN_PATH, LTH_LOGIN_BODY (sent
// as is), LTH_LOGIN_CONTENT_TYPE, LTH_TOKEN_FIELD, LTH_GET_PATH, LTH_TOKEN_HEADER, LTH_RELOGIN_EVERY (0: never).
import http from 'k6/http';

const BASE = __ENV.LTH_BASE;
const LOGIN_URL = BASE + __ENV.LTH_LOGIN_PATH;
const GET_URL = BASE + __ENV.LTH_GET_PATH;
const RELOGIN_EVERY = Number(__ENV.LTH_RELOGIN_EVERY || 0);
const LOGIN_PARAMS = {
  headers: { 'Content-Type': __ENV.LTH_LOGIN_CONTENT_TYPE },
  responseType: 'text',          // the one body k6 must keep: the login's, for its token
  tags: { name: 'login' },
  timeout: '10s',
};

export const options = {
  // The API's page is read and dropped, as in script.js; the login asks for its body (responseType above).
  discardResponseBodies: true,
  // No expressions: nothing can fail; a threshold on a tag only makes k6 keep that sub-metric in its summary.
  thresholds: {
    'http_req_duration{name:login}': [],
    'http_req_duration{name:api_get}': [],
  },
};

// This VU's state: its global scope is its own JS runtime.
let token = null;
let getsSinceLogin = 0;

export function setup() {
  console.log(`LTH_LOAD_START_MS ${Date.now()}`);
}

export default function () {
  if (token === null || (RELOGIN_EVERY > 0 && getsSinceLogin >= RELOGIN_EVERY)) {
    const res = http.request(__ENV.LTH_LOGIN_METHOD, LOGIN_URL, __ENV.LTH_LOGIN_BODY, LOGIN_PARAMS);
    let found = null;
    try {
      found = res.status === 200 ? res.json(__ENV.LTH_TOKEN_FIELD) : null;
    } catch (e) {
      found = null;     // not JSON: no token; this VU logs in again next iteration (the API counts it)
    }
    token = typeof found === 'string' && found !== '' ? found : null;
    getsSinceLogin = 0;
    return;
  }
  http.get(GET_URL, { headers: { [__ENV.LTH_TOKEN_HEADER]: token }, tags: { name: 'api_get' }, timeout: '10s' });
  getsSinceLogin += 1;
}
