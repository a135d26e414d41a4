"""Targets as adapters (issue 23): ``targets/<id>/target.toml``, discovered like tools (targets/README.md).

Every stack ends at the Nginx file server (targets/nginx): it serves the file, counts connections and
requests (stub_status) and sleeps per request when a scenario asks for a backend delay. A ``proxy``
target runs in front of it and is what the tools load; its configuration is ``targets/<id>/<config>.j2``
(Jinja2), rendered into the stack's folder. The tools' port is 80 (443 with TLS, also for h2; 81 for h2c, whose
port speaks nothing else); behind a proxy the file server listens on 8080. The harness's own requests
(the check, the RTT probes, stub_status) stay on HTTP/1.1 and port 80 or 443, and say so in their User-Agent.

The package's face: discovery.py (target.toml -> TargetAdapter), setup.py (what a scenario asks of the stack),
certificate.py (the throw-away TLS certificate), staging.py (a setup's configurations written into a folder).
"""
from harness.targets.certificate import Certificate, make_certificate
from harness.targets.discovery import FILE_SERVER, TargetAdapter, discover, get
from harness.targets.setup import SERVED_AS, Setup
from harness.targets.staging import (DELAY_LEVELS, ECHO_MODULE, H2C_PORT, JS_MODULE, LOAD_PORT, PRIVATE_FILES,
                                     PROTO_HEADER, PROTOCOL_LOG, TLS_PORT, UNDELAYED, UPSTREAM_PORT, Process, Stack,
                                     served_folder, stack_facts, stage, version_of)

__all__ = ["Certificate", "make_certificate", "FILE_SERVER", "TargetAdapter", "discover", "get", "SERVED_AS", "Setup",
           "DELAY_LEVELS", "ECHO_MODULE", "H2C_PORT", "JS_MODULE", "LOAD_PORT", "PRIVATE_FILES", "PROTO_HEADER",
           "PROTOCOL_LOG", "TLS_PORT", "UNDELAYED", "UPSTREAM_PORT", "Process", "Stack", "served_folder", "stack_facts", "stage",
           "version_of"]
