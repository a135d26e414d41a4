"""Running a suite: the plan and its pre-flight checks, the machine's lock, each run from start to stored
record (runner: the suite loop; run: one run; execution), what the suite prints (console), the stall test, and
sweeping what a killed run left (cleanup).

The runner and run are the modules here that also derive (harness/row/) and shape (harness/network/): they
orchestrate. The others import the runtimes, the stored run and the shared modules.
"""
