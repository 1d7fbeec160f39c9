"""Debian's Chromium, headless, driven by Playwright: for the report's browser test and
for the script that takes the report's picture for docs/."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
# Chromium's own connections (updates, sync...) are refused on a closed network, noisily.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}


def launch(playwright):
    """A headless Chromium from a started `sync_playwright()`."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
