// Open model (issue 13): k6's constant-arrival-rate executor starts LTH_RATE iterations per second
// (one GET each) for LTH_DURATION seconds, on at most LTH_VUS VUs (pre-allocated, maxVUs = the cap).
// An iteration due while every VU is busy is not sent but counted in dropped_iterations: k6 times
// each request from its actual send, not from its intended start.
import http from 'k6/http';

export const options = {
  discardResponseBodies: true,
  scenarios: {
    lth: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.LTH_RATE),
      timeUnit: '1s',
      duration: `${__ENV.LTH_DURATION}s`,
      preAllocatedVUs: Number(__ENV.LTH_VUS),
      maxVUs: Number(__ENV.LTH_VUS),
    },
  },
};

export function setup() {
  console.log(`LTH_LOAD_START_MS ${Date.now()}`);
}

export default function () {
  http.get(__ENV.LTH_URL, { timeout: '10s' });
}
