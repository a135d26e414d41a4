"""The network between tool and target: shaping the RTT (netem, Toxiproxy) and checking it
(shaping), the packet capture (capture) and what the wire says once read (wire: latencies, handshakes,
the arrival schedule's fidelity).

Imports the runtimes (a session runs the commands where the tool runs), the target, the shared modules.
"""
