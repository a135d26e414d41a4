// Preloaded with `node -r`: Artillery 2.0.21 creates a PostHog client at start and sends a
// "test run" event even when ARTILLERY_DISABLE_TELEMETRY is set (then without details). The
// harness must never contact a host other than its target, so posthog-node is replaced by a stub.
'use strict';
const Module = require('module');

process.env.ARTILLERY_DISABLE_TELEMETRY = '1';   // also silences the "telemetry is on" notice

class NoPostHog {
  capture() {}
  async shutdownAsync() {}
  async shutdown() {}
}

const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === 'posthog-node') {
    return { PostHog: NoPostHog };
  }
  return load.apply(this, arguments);
};
