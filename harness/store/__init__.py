"""The stored run: what a run writes beside the tool's own output and what `rederive` reads back.

- ``record``: record.json (the run's setup, its parts, the target's counts) and execution.json (the
  tool process's facts), SCHEMA_VERSION;
- ``samples``: top's frames, samples*.csv;
- ``stall``: a stall as it happened;
- ``results``: the derived row's columns (runs.csv), meta.json and the results folder;
- ``stored``: one run read back for the derivation (StoredRun) and its derived row and meta.json written (Derived).
- ``limits``: the limited_by codes and their rule, on plain values;
- ``upgrade``: the one point where an older folder's rows become the current schema's;
- ``lock``: the machine's lock and a results folder's one writer (a suite, rederive, the report).

It imports nothing from the run side (runner, runtimes, shaping, sampling) nor from the derivation
(harness/row/): both import it, and analysis/ reads results only through it (tests/test_imports.py holds
the directions).
"""
