"""The stored run: what a run writes beside the tool's own output and what `rederive` reads back.

- ``record``: record.json (the run's setup, its parts, the target's counts) and execution.json (the
  tool process's facts), SCHEMA_VERSION;
- ``samples``: top's frames, samples*.csv;
- ``stall``: a stall as it happened;
- ``results``: the derived row's columns (runs.csv), meta.json and the results folder;
- ``stored``: one run read back for the derivation (StoredRun) and its derived row and meta.json written (Derived).

It imports nothing from the run side (runner, runtimes, shaping, sampling) nor from the derivation
(harness/row/): both import it (tests/test_imports.py holds the directions).
"""
