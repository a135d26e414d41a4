"""The docs' reference tables are the code's (issue 49): scripts/gen_docs.py regenerates every
``<!-- generated: NAME -->`` block of README.md and docs/*.md, and a block that differs fails here. Each
generator is also shown to catch a planted mismatch, and results/sample's columns are the schema's."""
import csv
import importlib.util
import re
from pathlib import Path

import pytest

from harness.store.results import COLUMNS

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
gen_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_docs)

EXPECTED = {"runs-columns": "docs/results.md", "scorecard-columns": "docs/report.md",
            "report-sections": "docs/report.md", "tools": "README.md", "cli-options": "docs/options.md",
            "make-variables": "docs/options.md"}


def test_every_generated_block_is_what_the_code_gives():
    assert gen_docs.stale() == [], "run .venv/bin/python scripts/gen_docs.py"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_table_has_its_block(name):
    assert f"<!-- generated: {name} -->" in (REPO / EXPECTED[name]).read_text()


def plant(tmp_path: Path, name: str, edit) -> list[str]:
    """The block ``name`` of its page with ``edit`` applied to it, in a copy: what --check says of it."""
    text = (REPO / EXPECTED[name]).read_text()
    match = next(m for m in gen_docs.BLOCK.finditer(text) if m.group(2) == name)
    planted = text[:match.start(3)] + edit(match.group(3)) + text[match.end(3):]
    copy = tmp_path / "page.md"
    copy.write_text(planted)
    return _stale(copy)


def _stale(path: Path) -> list[str]:
    text = path.read_text()
    return [m.group(2) for m in gen_docs.BLOCK.finditer(text) if m.group(3) != gen_docs.GENERATORS[m.group(2)]()]


def _swap_rows(block: str, first: int, second: int) -> str:
    lines = block.splitlines(keepends=True)
    lines[first], lines[second] = lines[second], lines[first]
    return "".join(lines)


def test_a_runs_column_out_of_order_or_reworded_is_caught(tmp_path):
    assert plant(tmp_path, "runs-columns", lambda b: _swap_rows(b, 2, 3)) == ["runs-columns"]
    assert plant(tmp_path, "runs-columns", lambda b: b.replace("| `rps` |", "| `rps_total` |")) == ["runs-columns"]


def test_a_flag_or_a_make_default_edited_by_hand_is_caught(tmp_path):
    assert plant(tmp_path, "cli-options", lambda b: b.replace("`--duration`", "`--time`")) == ["cli-options"]
    assert plant(tmp_path, "make-variables", lambda b: b.replace("| `RUNTIME` | `docker` |", "| `RUNTIME` | `host` |")) \
        == ["make-variables"]


def test_a_scorecard_column_missing_is_caught(tmp_path):
    assert plant(tmp_path, "scorecard-columns", lambda b: "".join(b.splitlines(True)[:-1])) == ["scorecard-columns"]


def test_report_sections_in_another_order_are_caught(tmp_path):
    assert plant(tmp_path, "report-sections", lambda b: _swap_rows(b, 2, 3)) == ["report-sections"]


def test_the_report_sections_follow_the_template():
    """The doc's anchors are the template's <h2 id> in order, whatever the template now holds."""
    template = (REPO / "analysis" / "templates" / "report.html.j2").read_text()
    anchors = [a.split("{{")[0] for a in re.findall(r'<h2 id="([^"]+)"', template)]
    block = gen_docs.report_sections()
    assert [a.split("<folder>")[0] for a in re.findall(r"`#([^`]+)`", block)] == anchors


def test_a_tool_row_edited_by_hand_is_caught(tmp_path):
    assert plant(tmp_path, "tools", lambda b: b.replace("| yes |", "| no |", 1)) == ["tools"]


def test_an_unknown_block_is_refused():
    with pytest.raises(SystemExit, match="unknown generated block"):
        gen_docs.regenerate("<!-- generated: nonsense -->\nx\n<!-- end -->", "page.md")


@pytest.mark.parametrize("runs", sorted((REPO / "results" / "sample").glob("*/runs.csv")),
                         ids=lambda p: p.parent.name)
def test_the_sample_columns_are_the_schema_in_order(runs):
    """results/sample's runs.csv: every column is one of runs.csv's, in runs.csv's order (a sample written
    before later columns existed holds fewer of them: docs/results.md says so)."""
    header = next(csv.reader(runs.open()))
    assert [c for c in header if c not in COLUMNS] == []
    assert header == [c for c in COLUMNS if c in header], "the sample's columns are out of runs.csv's order"


def test_the_sample_command_writes_every_column_from_a_real_runs_raw_files(tmp_path):
    """scripts/refresh_sample.py on a stored real run (tests/fixtures/rederive: wrk, ab and k6 on the host):
    wrk's and ab's runs copied and derived again, runs.csv with every column of the schema, in order."""
    spec = importlib.util.spec_from_file_location("refresh_sample", REPO / "scripts" / "refresh_sample.py")
    refresh_sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(refresh_sample)
    stored = next((REPO / "tests" / "fixtures" / "rederive").iterdir())
    written = refresh_sample.refresh(stored, {"wrk", "ab"}, tmp_path)
    rows = list(csv.DictReader((written / "runs.csv").open()))
    assert next(csv.reader((written / "runs.csv").open())) == COLUMNS
    assert sorted({row["tool"] for row in rows}) == ["ab", "wrk"] and all(row["status"] == "ok" for row in rows)
    assert all((written / row["run_dir"] / "record.json").is_file() for row in rows)
    assert not (written / "runs.csv.before-rederive").exists()


PAGES = sorted((REPO / "docs").glob("*.md"))


def test_the_test_budget_in_tests_readme_is_the_one_make_test_prints():
    spec = importlib.util.spec_from_file_location("run_tests", REPO / "scripts" / "run-tests.py")
    run_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_tests)
    text = " ".join((REPO / "tests" / "README.md").read_text().split())
    tiers = ", ".join(f"{tier} {minutes}" for tier, minutes in run_tests.BUDGET_MIN.items())
    assert f"**{run_tests.SUITE_BUDGET_MIN} min** ({tiers}:" in text
    assert f"**{run_tests.FRESH_BUDGET_MIN} min**" in text
    assert sum(run_tests.BUDGET_MIN.values()) == run_tests.SUITE_BUDGET_MIN


def test_the_readme_is_one_page():
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_starts_with_the_command_that_exercises_it(page):
    lines = page.read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1] == "```" and lines[2].strip(), lines[:3]


@pytest.mark.parametrize("page", [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "tests" / "README.md",
                                  REPO / "targets" / "README.md", REPO / "results" / "README.md", *PAGES],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_into_the_tree_leads_somewhere(page):
    """Relative links ([text](path) and src="path"), anchors aside."""
    text = page.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    pending: set[str] = set()
    broken = [t for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")
              and not (page.parent / t.split("#")[0]).exists()
              and str((page.parent / t.split("#")[0]).resolve().relative_to(REPO)) not in pending]
    assert broken == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_block_depends_on_where_the_repository_was_cloned(name):
    """CI clones elsewhere (/check/...): a default printed as an absolute path made the block stale there."""
    assert str(REPO) not in gen_docs.GENERATORS[name]()
