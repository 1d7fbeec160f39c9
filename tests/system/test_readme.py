"""The README as a front door that cannot rot: its links resolve to files (and headings)
in the repository, its blocks marked `<!-- runnable -->` run, and what it says about
--version and shell completion holds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

ROOT = REPO
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
# what installs: .ci/run installs from scratch on every change; here the tests' own
# environment stands in for the README's .venv
INSTALLING = re.compile(r"^(python3? -m venv |\S*pip install )")


def _links(text: str) -> list[str]:
    return [m[1] for m in re.finditer(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", m[1])]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings: lowercased, punctuation but - and _ dropped,
    spaces as hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def test_every_readme_link_resolves_to_a_file_and_heading_in_the_repo():
    links = _links(README.read_text())
    assert len(links) >= 10
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), f"README links to {link}: no such file"
        if anchor:
            assert anchor in _anchors(target.read_text()), f"README links to {link}: no such heading"


def test_every_docs_page_link_resolves_to_a_file_in_the_repo():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for link in _links(page.read_text()):
            path = link.partition("#")[0]
            if path:
                assert (page.parent / path).exists(), f"{page.name} links to {link}: no such file"


def runnable_blocks(text: str) -> list[str]:
    return re.findall(r"<!-- runnable -->\n```(?:sh|bash)\n(.*?)```", text, re.S)


def _as_here(block: str) -> list[str]:
    """The block's commands, one per `&&` step, installing steps left out, `.venv/bin/`
    being this environment's."""
    commands = []
    for line in block.splitlines():
        for step in line.split(" && "):
            step = step.strip()
            if step and not step.startswith("#") and not INSTALLING.match(step):
                commands.append(step.replace(".venv/bin/", f"{BIN}/"))
    return commands


def test_the_readmes_runnable_blocks_run_in_a_fresh_copy_of_the_repo(tmp_path):
    blocks = runnable_blocks(README.read_text())
    assert blocks, "the Quickstart is marked runnable"
    assert "tfr-convert mnist examples/mnist-sample" in blocks[0]  # the Quickstart is the first
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("_TFR")}
    for block in blocks:
        for command in _as_here(block):
            result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env)
            assert result.returncode == 0, (command, result.stderr[-2000:])
    assert sorted(p.name for p in (tmp_path / "out" / "mnist").glob("mnist-*.tfrecord-*"))  # the Quickstart's output


def test_the_quickstart_installs_light_and_ci_runs_both_readme_commands_as_they_stand():
    """The front door's two commands: the first installs what the main job needs (no
    extra) and converts the sample; the second installs the developer's extras and runs
    the tests. .ci/run runs both blocks as the README has them, not a copy of them."""
    text = README.read_text()
    quickstart = runnable_blocks(text)[0]
    (test_command,) = re.findall(r"<!-- test command -->\n```sh\n(.*?)```", text, re.S)
    assert ".venv/bin/pip install . &&" in quickstart and "[" not in quickstart.split("tfr-convert")[0]
    assert 'pip install -e ".[dev,beam]"' in test_command and "pytest -q" in test_command
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'bash -c "$(readme_block runnable)"' in ci and "bash -c \"$(readme_block 'test command')\"" in ci
    assert text.count("\n") <= 220, "the front door is at most 220 lines; the rest goes under docs/"


@pytest.mark.parametrize(("script", "variable"), [("tfr-convert", "_TFR_CONVERT_COMPLETE"),
                                                  ("tfr-inspect", "_TFR_INSPECT_COMPLETE")])  # fmt: skip
def test_shell_completion_as_the_readme_says(script, variable):
    assert f"{variable}=bash_source {script}" in README.read_text()
    for shell in ("bash", "zsh", "fish"):
        source = subprocess.run([str(BIN / script)], env={**os.environ, variable: f"{shell}_source"},
                                capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert variable in source and "complete" in source, shell
    if script == "tfr-convert":  # a real completion: the commands for a prefix, an option of one
        env = {**os.environ, variable: "bash_complete", "COMP_WORDS": "tfr-convert de", "COMP_CWORD": "1"}
        words = subprocess.run([str(BIN / script)], env=env, capture_output=True, text=True, check=True).stdout
        assert "plain,detection" in words.split()
        env |= {"COMP_WORDS": "tfr-convert detection --voc", "COMP_CWORD": "2"}
        words = subprocess.run([str(BIN / script)], env=env, capture_output=True, text=True, check=True).stdout
        assert "plain,--voc-origin" in words.split()


@pytest.mark.parametrize("script", ["tfr-convert", "tfr-inspect"])
def test_version_of_both_commands(script):
    from tfr_convert import __version__

    result = subprocess.run([str(BIN / script), "--version"], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"{script}, version {__version__}"
