"""The report as a reader sees it: Debian's chromium driven by Playwright (executable_path: no browser download)."""
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

VIEWPORT = {"width": 1400, "height": 900}


@dataclass
class FirstScreen:
    boxes: dict[str, dict | None]          # element id -> its bounding box (None: absent)
    console_errors: list[str] = field(default_factory=list)
    claim_verdicts: list[str] = field(default_factory=list)
    images_ok: bool = False

    def inside(self, element: str) -> bool:
        """``element`` is wholly inside the first viewport (no scroll)."""
        box = self.boxes.get(element)
        return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"] \
            and box["x"] + box["width"] <= VIEWPORT["width"]


def first_screen(index: Path, screenshot: Path, elements: tuple[str, ...] = ("banner", "headline", "verdict")) -> FirstScreen:
    """Opens ``index`` at 1400x900, keeps a screenshot of the first screen at ``screenshot``."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make test` installs it (scripts/deps.sh)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(index.as_uri())
            page.wait_for_load_state("load")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot))
            boxes = {name: (el.bounding_box() if (el := page.query_selector(f"#{name}")) else None) for name in elements}
            verdicts = [cell.inner_text().strip() for cell in page.query_selector_all("#claims-table td.verdict")]
            images_ok = page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
            return FirstScreen(boxes, errors, verdicts, images_ok)
        finally:
            browser.close()
