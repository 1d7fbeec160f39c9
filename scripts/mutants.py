"""Mutation testing of the modules whose bugs lose or corrupt data, with cosmic-ray.

    .venv/bin/python scripts/mutants.py                  # every module below
    .venv/bin/python scripts/mutants.py naming framing    # some of them, by name

Each module is mutated on its own (cosmic-ray's core operators, one mutant at a time, in
place: run it in a clean checkout and nothing else at once) and each mutant is run
against the tests that cover that module only, not the whole suite. Mutants inside
annotations are skipped (`from __future__ import annotations`: never evaluated). A
mutant the tests let through is listed in benchmarks/results/mutants.md with its line,
unless EQUIVALENT explains it (a mutant that cannot change behaviour); the goal is
zero unexplained survivors. Each module's last run is kept in mutants.json beside it
(with its date and command), so a run of some modules updates their rows and leaves
the others' as they were measured. CONTRIBUTING says when to run it.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"

# name -> (module, the tests that cover it: fast ones, no TensorFlow where possible)
TARGETS: dict[str, tuple[str, list[str]]] = {
    "naming": ("src/tfr_convert/dataset/naming.py", ["tests/test_naming.py"]),
    "framing": ("src/tfr_convert/containers/framing.py", ["tests/test_tfrecord.py", "tests/test_encode.py"]),
    "crc": ("src/tfr_convert/containers/crc.py", ["tests/test_tfrecord.py"]),
    "example": ("src/tfr_convert/dataset/example.py", ["tests/test_example.py"]),
    "salvage": ("src/tfr_convert/containers/salvage.py", ["tests/test_salvage.py"]),
    "coco_rle": (
        "src/tfr_convert/dataset/coco_rle.py",
        ["tests/test_hostile_masks.py", "tests/test_detection_masks.py"],
    ),
    "jpeg_check": ("src/tfr_convert/converters/jpeg_check.py", ["tests/test_jpeg_check.py"]),
    "png_check": ("src/tfr_convert/converters/png_check.py", ["tests/test_png_check.py"]),
    "splits": (
        "src/tfr_convert/dataset/splits.py",
        ["tests/test_seams.py", "tests/test_shards_splits.py", "tests/test_records_split.py"],
    ),
    "shards": ("src/tfr_convert/output/shards.py", ["tests/test_shards_splits.py"]),
    "example_columns": ("src/tfr_convert/dataset/example_columns.py", ["tests/test_example_columns.py"]),
    "fingerprints": ("src/tfr_convert/storage/fingerprints.py", ["tests/test_fingerprints.py"]),
    "remote_lock": ("src/tfr_convert/output/remote_lock.py", ["tests/test_stores.py"]),
}

# (module name, the mutated line as it reads, stripped, operator) -> why the mutant cannot
# change behaviour
EQUIVALENT: dict[tuple[str, str, str], str] = {
    (
        "framing",
        'headers = np.frombuffer(b"".join(header(int(length)) for length in distinct), np.uint8).reshape(-1, HEADER_SIZE)',
        operator,
    ): "-1 becomes -2: numpy infers the size of any negative dimension"
    for operator in ("ReplaceUnaryOperator_USub_Invert", "NumberReplacer")
}
EQUIVALENT[
    (
        "framing",
        "(crc32c(view[s:e]) for s, e in zip((starts + HEADER_SIZE).tolist(), ends.tolist(), strict=True)),",
        "ReplaceTrueWithFalse",
    )
] = "zip(strict=False): both lists come from arrays of one length, so they never differ"


# A rotation joins two shifts whose bits never overlap: | + ^ give one value
for _line in (
    "return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF",
    "return ((crcs >> 15) | (crcs << 17)) + np.uint32(_MASK_DELTA)",
    "return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF",
):
    for _operator in ("ReplaceBinaryOperator_BitOr_Add", "ReplaceBinaryOperator_BitOr_BitXor"):
        EQUIVALENT["crc", _line, _operator] = (
            "the two shifted halves of a 32-bit rotation have no bit in common, so OR, ADD and XOR agree"
        )
EQUIVALENT["splits", "for g in sorted(groups, key=lambda g: (-len(members[g]), rank_key(g))):",
           "ReplaceUnaryOperator_USub_Invert"] = "~n is -n - 1: the groups sort in the same order, largest first"  # fmt: skip
EQUIVALENT["fingerprints", "if now == _MISSING:", "ReplaceComparisonOperator_Eq_LtE"] = (
    "a listed or stat'ed file's size is 0 or more, so no entry but the missing one's is <= (-1, -1, -1)"
)
# The split module: a sorted array's neighbours, orders that do not matter, shifts that cancel
_TIES = "for at in np.flatnonzero(ordered[1:] == ordered[:-1]).tolist():  # equal keys rank alike"
for _operator in ("ReplaceComparisonOperator_Eq_LtE", "ReplaceComparisonOperator_Eq_GtE"):
    EQUIVALENT["splits", _TIES, _operator] = (
        "ordered is sorted ascending: a neighbour is never below the one before it, so <= finds the ties "
        "== finds, and >= visits every pair, where only tied ones can share a key"
    )
    EQUIVALENT["splits", "if key(first) == key(second):", _operator] = (
        "reached only for two items whose ranks tie, that is whose keys are equal (a 64-bit blake2b "
        "collision aside): equal strings are <= and >= each other"
    )
for _line in (
    "for _, members in sorted(groups.items(), key=lambda g: repr(g[0])):",
    "for _, groups in sorted(strata.items(), key=lambda s: repr(s[0])):",
):
    EQUIVALENT["splits", _line, "NumberReplacer"] = (
        "the order in which strata are placed: each stratum's choice depends on its own members only, and "
        "every split's items are sorted back into source order at the end"
    )
EQUIVALENT["splits", "placed = dict.fromkeys(names, 0)", "NumberReplacer"] = (
    "every split starts from the same count: the differences from the targets shift alike, the furthest below "
    "stays the furthest below"
)
_FURTHEST = "split = max(names, key=lambda s: (targets[names.index(s)] - placed[s], -names.index(s)))"
EQUIVALENT["splits", _FURTHEST, "ReplaceUnaryOperator_USub_Invert"] = (
    "~i is -i - 1: the tie-break orders the splits alike, the first named first"
)
EQUIVALENT["splits", _FURTHEST, "ReplaceUnaryOperator_USub_Not"] = (
    "max keeps the first of equal keys, and names are in order: `not i` prefers the first split and leaves "
    "the others tied, which max settles for the earlier one, as -i does"
)
EQUIVALENT["splits", "for (name, _), count in zip(spec.ratios, counts, strict=True):", "ReplaceTrueWithFalse"] = (
    "counts is exact_counts of spec.ratios' fractions: the two always have one length"
)
EQUIVALENT["splits", "*,", "ReplaceBinaryOperator_Mul_Div"] = (
    "`/` makes the parameters before it positional-only: every caller passes them by position"
)
EQUIVALENT[
    "fingerprints", 'f"{field} {a} then, {b} now" if field == "size" else field', "ReplaceComparisonOperator_Eq_Is"
] = "the field names and the literal are one interned string: `is` and `==` agree"
EQUIVALENT[
    "fingerprints",
    "for field, a, b in zip(REMOTE_FIELDS if fs.is_remote(self.root) else FIELDS, then, now, strict=True)",
    "ReplaceTrueWithFalse",
] = "three field names, and two unpacked entries of three numbers each: the lengths never differ"
_FAST_SORT = "if bool((ordered[1:] == ordered[:-1]).any()):"
for _operator in ("ReplaceComparisonOperator_Eq_NotEq", "ReplaceComparisonOperator_Eq_Gt",
                  "ReplaceComparisonOperator_Eq_GtE"):  # fmt: skip
    EQUIVALENT["splits", _FAST_SORT, _operator] = (
        "these take the stable sort whenever two neighbours differ: its order is the right one with ties or "
        "without; the default sort is only a shortcut for ranks that never tie"
    )
EQUIVALENT["splits", _FAST_SORT, "ReplaceComparisonOperator_Eq_LtE"] = (
    "ordered is sorted ascending: a neighbour is <= the one before it only when equal to it"
)
EQUIVALENT["splits", "if abs(sum(f for _, f in ratios) - 1) > 1e-6:", "ReplaceComparisonOperator_Gt_GtE"] = (
    "the two differ only for fractions adding up to exactly 1 +- 1e-6, to the last bit of a float"
)
EQUIVALENT["splits", "if len(set(names)) != len(names):", "ReplaceComparisonOperator_NotEq_Lt"] = (
    "a set of the names is never longer than their list: < and != agree"
)
EQUIVALENT["splits", "if len(set(names)) != len(names):", "ReplaceComparisonOperator_NotEq_IsNot"] = (
    "lengths below 257 are Python's shared small ints (no split spec names that many): `is not` agrees with !="
)
EQUIVALENT[
    "splits",
    "return Counter(stratum(items[i]) for i in indices).most_common(1)[0][0]  # type: ignore[misc]",
    "NumberReplacer",
] = "most_common(2)[0] is most_common(1)[0], and index -1 of a one-item list is index 0"
EQUIVALENT["splits", "if TYPE_CHECKING:", "AddNot"] = (
    "numpy is then imported with the module instead of at the first ranking: start-up time, no behaviour"
)
EQUIVALENT[
    "splits", 'got = ", ".join(f"{name} {len(splits[name]) / (total or 1):.3f}" for name, _ in spec.ratios)',
    "NumberReplacer",
] = "with no examples every share is 0 over any denominator but 0"  # fmt: skip
_STALE_BY_LEASE = "return modified is not None and time.time() - modified > self.lease"
EQUIVALENT["remote_lock", _STALE_BY_LEASE, "ReplaceBinaryOperator_Sub_Mod"] = (
    "t % m is t - m whenever m <= t < 2m: for any last-modified time after half of now since the epoch"
)
EQUIVALENT["remote_lock", _STALE_BY_LEASE, "ReplaceComparisonOperator_Gt_GtE"] = (
    "the two differ only when exactly LEASE seconds have passed, to the last bit of a float clock"
)
EQUIVALENT["crc", "crcs = crcs.astype(np.uint32, copy=False)", "ReplaceFalseWithTrue"] = (
    "astype(copy=True) copies the same values; the copy is never written to"
)


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((line, column), (end line, end column)) of every annotation: mutating inside one
    changes nothing (`from __future__ import annotations`: they are never evaluated)."""
    annotations = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            annotations += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in annotations]


def _inside(position: tuple[int, int], spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _run(name: str, work: Path, timeout: float) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    module, tests = TARGETS[name]
    config = work / f"{name}.toml"
    session = work / f"{name}.sqlite"
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{PYTHON} -m pytest -x -q -p no:cacheprovider {" ".join(tests)}"\n'
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    session.unlink(missing_ok=True)
    cosmic = [str(REPO / ".venv" / "bin" / "cosmic-ray")]
    subprocess.run([*cosmic, "init", str(config), str(session)], check=True, cwd=REPO, capture_output=True)
    source = (REPO / module).read_text()
    annotations = _annotation_spans(source)
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in db.work_items:
            if any(_inside(tuple(m.start_pos), annotations) for m in item.mutations):
                skipped = WorkResult(output=None, test_outcome=None, diff=None, worker_outcome=WorkerOutcome.SKIPPED)
                db.set_result(item.job_id, skipped)
    subprocess.run([*cosmic, "exec", str(config), str(session)], check=True, cwd=REPO, capture_output=True)
    lines = source.splitlines()
    found = {"module": module, "tests": tests, "mutants": 0, "killed": 0, "survivors": [], "explained": []}
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            found["mutants"] += 1
            if result.test_outcome != TestOutcome.SURVIVED:
                found["killed"] += 1
                continue
            mutation = item.mutations[0]
            line = lines[mutation.start_pos[0] - 1].strip()
            found["survivors"].append(
                f"line {mutation.start_pos[0]}: `{line}` ({mutation.operator_name.split('/')[-1]})"
            )
    _explain(name, found)
    subprocess.run(["git", "checkout", "--", module], cwd=REPO, check=True)  # whatever a killed run left
    return found


_SURVIVOR = re.compile(r"line \d+: `(.*)` \(([A-Za-z_]+)\)$")


def _explain(name: str, found: dict) -> None:
    """Move the survivors EQUIVALENT explains to `explained`, with the reason."""
    still = []
    for entry in found["survivors"]:
        m = _SURVIVOR.match(entry)
        why = EQUIVALENT.get((name, m[1], m[2])) if m else None
        if why:
            found["explained"].append(f"{entry}: {why}")
        else:
            still.append(entry)
    found["survivors"] = still


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", choices=[[], *TARGETS], default=[], metavar="MODULE")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a mutant's tests may take")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "mutants.md"))
    parser.add_argument(
        "--explain-only",
        action="store_true",
        help="run nothing: apply EQUIVALENT to the survivors kept in mutants.json and write the results again",
    )
    args = parser.parse_args()
    names = [] if args.explain_only else args.modules or list(TARGETS)
    work = Path(tempfile.mkdtemp(prefix="tfr-mutants-"))
    kept = Path(args.out).with_suffix(".json")
    results = json.loads(kept.read_text()) if kept.exists() else {}
    results = {name: r for name, r in results.items() if name in TARGETS}  # modules no longer targeted go
    command = "python scripts/mutants.py" + ("" if not args.modules else " " + " ".join(args.modules))
    if args.explain_only:
        for name, r in results.items():
            _explain(name, r)
        command = kept.with_suffix(".md").read_text().split("the last run: `", 1)[-1].split("`", 1)[0]
    for name in names:
        started = datetime.datetime.now()
        results[name] = _run(name, work, args.timeout)
        results[name]["seconds"] = (datetime.datetime.now() - started).total_seconds()
        results[name]["run"] = f"{datetime.date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        r = results[name]
        print(f"{name}: {r['killed']}/{r['mutants']} killed, {len(r['survivors'])} unexplained survivors, "
              f"{r['seconds']:.0f} s", flush=True)  # fmt: skip
    results = {name: results[name] for name in TARGETS if name in results}
    kept.write_text(json.dumps(results, indent=1) + "\n")
    out = [
        "# Mutation testing",
        "",
        f"`python scripts/mutants.py [MODULE...]` (cosmic-ray, core operators; each module against the tests "
        f"listed); the last run: `{command}`. Modules not yet run: {', '.join(n for n in TARGETS if n not in results) or 'none'}.",
        "",
        "| module | tests | mutants | killed | explained | unexplained survivors | time | run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results.values():
        out.append(
            f"| `{r['module']}` | {', '.join(f'`{t}`' for t in r['tests'])} | {r['mutants']} | {r['killed']} "
            f"| {len(r['explained'])} | {len(r['survivors'])} | {r['seconds']:.0f} s | {r.get('run', '')} |"
        )
    for name, r in results.items():
        if r["survivors"] or r["explained"]:
            out += ["", f"## {name}", ""]
            out += [f"- survived: {s}" for s in r["survivors"]]
            out += [f"- equivalent: {s}" for s in r["explained"]]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    print("\n".join(out))
    sys.exit(1 if any(r["survivors"] for r in results.values()) else 0)


if __name__ == "__main__":
    main()
