// One GET per iteration, no sleep: each VU is one closed-loop user on its own keep-alive connection.
// VUs and duration come from the command line (--vus, --duration); the URL from -e LTH_URL.
import http from 'k6/http';

export const options = {
  // The body is read and dropped, as the other tools do (k6 would otherwise keep it as a JS string).
  discardResponseBodies: true,
};

// setup() runs once, after every VU is initialised and right before the VUs start: its timestamp
// (k6's own clock) marks the start of the load window for the harness.
export function setup() {
  console.log(`LTH_LOAD_START_MS ${Date.now()}`);
}

export default function () {
  http.get(__ENV.LTH_URL, { timeout: '10s' });
}
