#!/usr/bin/env python3
"""A stand-in `docker` CLI for the swarm runtime's unit tests (tests/test_swarm.py): it answers the read-only
commands the pre-flight asks (version, compose version, info, node ls/inspect, network ls/inspect) from the
JSON state in $FAKE_DOCKER_STATE, logs every command line to $FAKE_DOCKER_LOG, and fails any other command
(create, init, rm ...): a pre-flight that changed something shows in the log and in its exit status."""
import json
import os
import sys


def main(argv: list[str]) -> int:
    with open(os.environ["FAKE_DOCKER_LOG"], "a") as log:
        log.write(" ".join(argv) + "\n")
    state = json.loads(os.environ["FAKE_DOCKER_STATE"])
    if state.get("down"):
        print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", file=sys.stderr)
        return 1
    words = [w for w in argv if not w.startswith("-") and "{{" not in w]
    if words[:1] == ["version"] or words[:2] == ["compose", "version"]:
        print("20.10.24")
    elif words[:1] == ["info"]:
        print(json.dumps(state["swarm"]))
    elif words[:2] == ["node", "ls"]:
        print("\n".join(state.get("nodes", {})))
    elif words[:2] == ["node", "inspect"]:
        node = state["nodes"][words[2]]
        print(json.dumps({"Spec": {"Labels": node.get("labels", {})}, "Status": {"State": "ready"},
                          "Description": {"Hostname": words[2]}}))
    elif words[:2] == ["network", "inspect"]:
        subnets = state.get("networks", {}).get(words[2])
        if subnets is None:
            print(f"Error: No such network: {words[2]}", file=sys.stderr)
            return 1
        print(" ".join(subnets))
    else:
        print(f"fake docker: refused: {' '.join(argv)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
