"""Opening a suite's results folder: a new one, or the one --resume names with the runs it keeps."""
from __future__ import annotations

from harness.store.results import ResultsFolder
from harness.suite.plan import Plan

RunKey = tuple[str, str, int]   # (scenario, tool, repeat)


def open_folder(plan: Plan) -> tuple[ResultsFolder, set[RunKey]]:
    """A new results folder, or the one being resumed with the (scenario, tool, repeat) runs to skip."""
    if plan.resume is None:
        plan.results_root.mkdir(parents=True, exist_ok=True)
        return ResultsFolder.create(plan.results_root, plan.runtime), set()
    folder = ResultsFolder.open(plan.resume, plan.runtime)
    selected = {(s.id, t.name, r) for s, t, r in plan.runs}
    keep = [r for r in folder.rows() if _kept(r, selected, plan.force, plan.keep_unselected)]
    folder.rewrite(keep)  # failed/forced rows are redone; their old rows go
    return folder, {_key(r) for r in keep if r["status"] in ("ok", "unsupported")}


def _key(row: dict[str, str]) -> RunKey:
    return row["scenario"], row["tool"], int(row["repeat"])


def _kept(row: dict[str, str], selected: set[RunKey], force: bool, keep_unselected: bool) -> bool:
    """A resumed folder's ok or unsupported row stays unless --force redoes it; a failed one goes (it is redone),
    but with ``keep_unselected`` only if this suite selects it."""
    if keep_unselected and _key(row) not in selected:
        return True
    return row["status"] in ("ok", "unsupported") and not (force and _key(row) in selected)
