"""The resume journal: what an interrupted run had finished, so `--resume` can go on.

One JSON object per line, appended as the run goes:
- first, the run's identity: everything that shapes the output (tool version,
  converter, options, source fingerprints, a hash of the planned items, a hash of
  the item files' stats). A resumed run must present the same identity, or it is
  refused naming what differs; beside it, the item files' stats themselves
  (fingerprints.py), so that a changed input file is named.
- one line per finished shard: its temporary file, records, bytes and sha256,
  where the next shard starts (the batch of the split and the record within it)
  and the shard cutter's counters there;
- one line per finished split.
Each line also carries what the batches consumed since the previous line added
to the run's tally (the converter's observations, skipped items, warnings),
since those go into the metadata and must come out the same.

A torn last line (the run died while appending it) is ignored: the shard it
described is written again. On an object store each line is an object of its own,
written on a helper thread in order (a request takes as long as encoding a batch
there, and nothing waits for a line but the commit), so a kill leaves a prefix of
the lines. Lines are flushed, not fsynced: the files they describe are checked by
size and sha256 before being kept, which also catches what a power loss may have torn.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections import Counter
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import OutputError
from ..skips import Skips
from ..storage import fs
from ..storage.fingerprints import InputFiles
from .shards import Checkpoint
from .watched_futures import WatchedFutures


def jsonable(value: Any) -> Any:
    """Tuples (observations are tuples) as JSON lists; see `hashable`."""
    return [jsonable(v) for v in value] if isinstance(value, tuple) else value


def hashable(value: Any) -> Any:
    """The inverse of `jsonable`: JSON lists back to tuples."""
    return tuple(hashable(v) for v in value) if isinstance(value, list) else value


@dataclass
class Tally:
    """What encoding found besides records: observations, skipped items, warnings."""

    observations: Counter[Hashable] = field(default_factory=Counter)
    skipped: Skips = field(default_factory=Skips)
    warnings: list[str] = field(default_factory=list)

    def add(self, observations: Counter[Hashable], skipped: list[dict[str, str]], warnings: list[str]) -> None:
        """observations: counted already (once per batch, for every tally it goes to)."""
        self.observations.update(observations)
        self.skipped.extend(skipped)
        self.warnings += warnings

    def clear(self) -> None:
        self.observations.clear()
        self.skipped.clear()
        self.warnings.clear()

    def merge(self, other: Tally) -> None:
        self.observations.update(other.observations)
        self.skipped.merge(other.skipped)
        self.warnings += other.warnings

    def to_json(self) -> dict[str, Any]:
        return {
            "observations": [[jsonable(k), n] for k, n in self.observations.items()],
            "skipped": self.skipped.to_json(),
            "warnings": self.warnings,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tally:
        tally = cls(Counter(), Skips.from_json(data["skipped"]), list(data["warnings"]))
        for observed, n in data["observations"]:
            tally.observations[hashable(observed)] += n
        return tally


@dataclass
class ShardEntry:
    file: str  # basename of the temporary in the build directory
    records: int
    bytes: int
    sha256: str


@dataclass
class Progress:
    """What a journal says was finished."""

    shards: dict[str, list[ShardEntry]] = field(default_factory=dict)  # per split, in order
    done: list[str] = field(default_factory=list)  # splits finished
    at: dict[str, Checkpoint] = field(default_factory=dict)  # per split begun and not done
    tally: Tally = field(default_factory=Tally)


def _differences(recorded: Any, current: Any, prefix: str = "") -> list[str]:
    if isinstance(recorded, dict) and isinstance(current, dict):
        differences = []
        for key in sorted(set(recorded) | set(current), key=str):
            differences += _differences(recorded.get(key), current.get(key), f"{prefix}{key}.")
        return differences
    if recorded == current:
        return []
    shown = [json.dumps(v, sort_keys=True) for v in (recorded, current)]
    shown = [s if len(s) <= 60 else s[:57] + "..." for s in shown]
    return [f"{prefix.rstrip('.')}: {shown[0]} then, {shown[1]} now"]


class Journal:
    """The journal of one run, in its work directory (no path: a run that keeps none).

    Locally one file, appended to. On an object store (no appends) a folder of one
    object per line, `NNNNNNNN.json` in order; an object appears whole or not at all,
    so no line is ever torn there.
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._remote = path is not None and fs.is_remote(path)
        self._file: Any = None
        self._next = 0  # remote: the number of the next line's object
        self._writer: ThreadPoolExecutor | None = None  # remote: puts the lines, one at a time, in order
        self._written = WatchedFutures()

    def _line(self, number: int) -> str:
        assert self.path is not None
        return fs.join(self.path, f"{number:08d}.json")

    def _lines(self) -> list[str]:
        """A remote journal's line objects, in order."""
        assert self.path is not None
        if not fs.isdir(self.path):
            return []
        return sorted(fs.join(self.path, n) for n in fs.listdir(self.path) if re.fullmatch(r"\d{8}\.json", n))

    def exists(self) -> bool:
        if self.path is None:
            return False
        return bool(self._lines()) if self._remote else os.path.exists(self.path)

    def _read_lines(self) -> list[tuple[dict[str, Any], int]]:
        """Every whole line, with where it ends (a file's length after it; a line's number + 1)."""
        assert self.path is not None
        entries = []
        if self._remote:
            for number, path in enumerate(self._lines()):
                if path != self._line(number):  # a gap: what follows it is not believed
                    break
                try:
                    entries.append((json.loads(fs.read_bytes(path)), number + 1))
                except ValueError:
                    break
            return entries
        with open(self.path, "rb") as f:
            data = f.read()
        at = 0
        while (end := data.find(b"\n", at)) >= 0:
            try:
                entries.append((json.loads(data[at:end]), end + 1))
            except ValueError:
                break  # a torn line: the run died while appending it
            at = end + 1
        return entries

    def read(self, identity: dict[str, Any], inputs: InputFiles | None = None) -> list[tuple[dict[str, Any], int]]:
        """The finished steps of the interrupted run, each with where the journal ends
        after it; OutputError if that run was not this one (its identity differs), naming
        the first changed input file where only those differ."""
        entries = self._read_lines()
        if not entries or "identity" not in entries[0][0]:
            return []
        differences = _differences(entries[0][0]["identity"], json.loads(json.dumps(identity)))
        if inputs is not None and differences and all(d.split(":")[0].split(".")[0] == "inputs" for d in differences):
            changed = inputs.first_change(_stored_stats(entries[0][0]))
            if changed is not None:
                raise OutputError(
                    f"cannot --resume: {changed} since the interrupted run began, which encoded it; "
                    "use --overwrite to start over"
                )
        if differences:
            shown = "; ".join(differences[:5]) + (f"; {len(differences) - 5} more" if len(differences) > 5 else "")
            raise OutputError(
                f"cannot --resume: the interrupted run differs from this one ({shown}); "
                "run the same command, or use --overwrite to start over"
            )
        steps = entries[1:]
        for i, (entry, _) in enumerate(steps):
            if not _well_formed(entry):  # edited or damaged: what follows is done again
                return steps[:i]
        return steps

    def open(
        self,
        identity: dict[str, Any],
        kept: list[tuple[dict[str, Any], int]] | None = None,
        inputs: InputFiles | None = None,
    ) -> None:
        """Begin appending: after the `kept` entries of a journal just read, or anew."""
        if self.path is None:
            return
        head: dict[str, Any] = {"identity": identity}
        if inputs is not None:
            head["inputs"] = base64.b64encode(inputs.stats).decode("ascii")
        first = json.dumps(head, sort_keys=True)
        if self._remote:
            self._next = kept[-1][1] if kept else 1  # the line after the last kept one, or the identity
            if kept is None:
                fs.rmtree(self.path)
                fs.put_bytes(self._line(0), first.encode())
            else:
                fs.remove_many(self._lines()[self._next :])
            return
        if kept is None:
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(first + "\n")
        else:
            with open(self.path, "r+b") as f:
                f.truncate(kept[-1][1] if kept else len(f.readline()))
        self._file = open(self.path, "a", encoding="utf-8")

    def remove(self) -> None:
        if self.path is None:
            return
        if self._remote:
            fs.rmtree(self.path)
        elif os.path.exists(self.path):
            os.remove(self.path)

    def shard_done(self, split: str, shard: ShardEntry, at: Checkpoint, tally: Tally) -> None:
        self._append(
            {
                "split": split,
                "shard": vars(shard),
                "batch": at.batch,
                "offset": at.offset,
                "cutter": list(at.cutter),
                "tally": tally.to_json(),
            }
        )

    def split_done(self, split: str, tally: Tally) -> None:
        self._append({"split": split, "done": True, "tally": tally.to_json()})

    def _append(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, sort_keys=True)
        if self._remote:
            self._written.raise_failed()
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="tfr-convert-journal")
            self._written.add(self._writer.submit(fs.put_bytes, self._line(self._next), text.encode()))
            self._next += 1
            return
        if self._file is None:
            return
        self._file.write(text + "\n")
        self._file.flush()

    def flush(self) -> None:
        """Every line appended so far is written; the first failure raised."""
        self._written.wait()

    def close(self) -> None:
        """The lines under way are let finish (errors ignored: `flush` reports them)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
            self._written.clear()
        if self._file is not None:
            self._file.close()
            self._file = None


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _well_formed(entry: Any) -> bool:
    """Whether a journal line has the shape this module writes (a line edited by hand, or
    damaged on disk, is not believed: the run redoes from there)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("split"), str):
        return False
    tally = entry.get("tally")
    if not isinstance(tally, dict):
        return False
    try:
        Tally.from_json(tally)
    except (KeyError, TypeError, ValueError):  # what JSON of the wrong shape raises there
        return False
    if entry.get("done") is True:
        return True
    shard, cutter = entry.get("shard"), entry.get("cutter")
    return (
        isinstance(shard, dict)
        and set(shard) == {"file", "records", "bytes", "sha256"}
        and isinstance(shard["file"], str)
        and re.fullmatch(r"[0-9a-f]{64}", str(shard["sha256"])) is not None
        and _count(shard["records"])
        and _count(shard["bytes"])
        and _count(entry.get("batch"))
        and _count(entry.get("offset"))
        and isinstance(cutter, list)
        and len(cutter) == 3
        and all(map(_count, cutter))
    )


def _stored_stats(head: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(head.get("inputs") or "", validate=True)
    except (ValueError, TypeError):
        return b""


def replay(entries: list[tuple[dict[str, Any], int]]) -> Progress:
    """What the journal entries say was finished."""
    progress = Progress()
    for entry, _ in entries:
        split = entry["split"]
        progress.tally.merge(Tally.from_json(entry["tally"]))
        if entry.get("done"):
            progress.done.append(split)
            progress.at.pop(split, None)
            continue
        progress.shards.setdefault(split, []).append(ShardEntry(**entry["shard"]))
        progress.at[split] = Checkpoint(entry["batch"], entry["offset"], tuple(entry["cutter"]))
    return progress


def shard_of(entry: dict[str, Any]) -> ShardEntry | None:
    return ShardEntry(**entry["shard"]) if "shard" in entry else None
