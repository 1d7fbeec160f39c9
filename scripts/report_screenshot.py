"""The picture of a report that docs/ shows: the shipped MNIST sample converted, its
--report opened in headless Chromium (Debian's `chromium`; Playwright drives it) at
1280 px, the whole page captured.

    python scripts/report_screenshot.py [--out docs/report-mnist.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' browser settings, shared
from browser import VIEWPORT, launch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report-mnist.png")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        dataset, page_path = Path(tmp) / "mnist", Path(tmp) / "report.html"
        sample = ROOT / "examples" / "mnist-sample"
        subprocess.run([bin_dir / "tfr-convert", "mnist", sample, "--out", dataset, "--quiet"], check=True)
        subprocess.run([bin_dir / "tfr-inspect", dataset, "--report", page_path, "--report-per-class", "6"], check=True)
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(page_path.as_uri())
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
