"""Running a suite: the plan and its pre-flight checks, the machine's lock, each run from start to stored
record (runner, execution), the stall test, and sweeping what a killed run left (cleanup).

The runner is the one module here that also derives (harness/row/) and shapes (harness/network/): it
orchestrates. The others import the runtimes, the stored run and the shared modules.
"""
