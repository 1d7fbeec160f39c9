"""A run's output, whatever it is: what the engines and resume.py see of it.

`Output` is what both kinds share: a local directory (local.LocalOutput: built beside
DIR, swapped in whole) or a remote prefix (remote.RemoteOutput: a commit rolled
forward from a record). Both hold one run at a time (a lock), a journal for --resume,
a build area for the shards (`temp_path`, `opener`), and `commit`; opening.py says
which one a path gets.
"""

from __future__ import annotations

import hashlib
from typing import IO, Any

from ..dataset.existing import load_json
from ..dataset.features import flatten_tfds
from ..dataset.naming import FEATURES, INFO, MANIFEST, TEMP_PREFIX, ShardName
from ..errors import Interrupted, OutputError
from ..storage import fs
from ..storage.fingerprints import InputFiles
from .journal import Journal, ShardEntry
from .shards import ShardFile, SplitResult


def dataset_files(directory: str) -> set[str]:
    """The files that make up the tfr-convert dataset in a directory, by its manifest
    (shards, their .index files, labels files of its features, the metadata); also
    the temporaries an older version may have left."""
    files = {e for e in fs.listdir(directory) if e.startswith(TEMP_PREFIX)} if fs.isdir(directory) else set()
    manifest = load_json(directory, MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("tool") != "tfr-convert":
        return files
    for split in (manifest.get("splits") or {}).values():
        for shard in split.get("shards") or []:
            files |= {shard["file"], shard["file"] + ".index"}
    features = ((load_json(directory, FEATURES) or {}).get("featuresDict") or {}).get("features") or {}
    files |= {labels_file for _, _, labels_file in flatten_tfds(features).values()}
    files |= {name for name in manifest.get("extra_files") or [] if isinstance(name, str) and "/" not in name}
    return files | {INFO, FEATURES, MANIFEST}


def sha256_of(path: str) -> str | None:
    """A local file's sha256, or None if it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


class Output:
    """What both kinds of output share: a local directory (LocalOutput, below) and a
    remote prefix (remote.RemoteOutput). Use as a context manager.

    `build` is where the run writes (`temp_path` names files in it); `commit`
    puts the finished dataset in place. On an exception the work is removed; on
    an interrupt (KeyboardInterrupt: SIGINT, or SIGTERM through the CLI) the
    finished shards and the journal are kept for --resume.
    """

    path: str
    build: str
    work: str | None
    journal: Journal

    def __init__(
        self, overwrite: bool, resume: bool, identity: dict[str, Any] | None, inputs: InputFiles | None = None
    ) -> None:
        """`identity`: what shapes the run's output (journal.py); --resume checks the
        interrupted run's journal against it before anything is touched. `inputs`: the
        stats of the items' files, to name one that changed (fingerprints.py)."""
        self.overwrite, self.resume, self.identity, self.inputs = overwrite, resume, identity or {}, inputs
        self.entries: list[tuple[dict[str, Any], int]] = []  # the journal's, when resuming
        self.finished = False  # --resume found the run done (see engine/local.run)
        self._temps: list[str] = []

    def _done_already(self) -> bool:
        """Whether DIR holds this run's dataset, whole: its manifest records this run's
        sources and options, and every shard it lists is there at its recorded size (a
        repair run into this command's own damaged output must not be taken for done)."""
        manifest = load_json(self.path, MANIFEST)
        if not isinstance(manifest, dict) or not self.identity:
            return False
        recorded = manifest.get("options") or {}
        if manifest.get("sources") != self.identity["sources"] or any(
            recorded.get(k) != v for k, v in self.identity["options"].items()
        ):
            return False
        for split in (manifest.get("splits") or {}).values():
            for shard in split.get("shards") or []:
                try:
                    if fs.getsize(fs.join(self.path, shard["file"])) != shard["bytes"]:
                        return False
                except (OSError, KeyError, TypeError):
                    return False
        return True

    def _refuse_start(self, nonempty: bool, partial: bool) -> None:
        """OutputError if the run may not start: DIR holds something and no --overwrite, or
        an interrupted run's work is there and neither --resume nor --overwrite."""
        if nonempty and not self.overwrite:
            hint = " (use --overwrite to replace it" + (
                ", with --resume to finish the interrupted run)" if partial else ")"
            )
            raise OutputError(f"{self.path}: output directory is not empty{hint}")
        if partial and not (self.resume or self.overwrite):
            raise OutputError(
                f"{self.path}: an interrupted run's unfinished work is in {self.work}; "
                "run the same command with --resume to finish it, or with --overwrite to start over"
            )

    @property
    def resuming(self) -> bool:
        return self.resume and self.journal.exists()

    def temp_path(self, label: str) -> str:
        p = fs.join(self.build, f"{TEMP_PREFIX}{label}")
        self._temps.append(p)
        return p

    def adopt(self, path: str) -> None:
        """Count a temporary written elsewhere (by a Beam worker) as this run's."""
        self._temps.append(path)

    @staticmethod
    def name_shards(results: list[SplitResult], dataset_name: str, file_format: str) -> None:
        """Fix each shard's final name, now that every split's shard count is known."""
        for result in results:
            count = len(result.shards)
            for i, shard in enumerate(result.shards):
                shard.final_name = ShardName(dataset_name, result.split, i, count, file_format).filename

    def opener(self, path: str) -> IO[bytes]:
        """Opens a shard's file to write (the container's writer writes through it)."""
        return fs.open_file(path)

    def sync(self) -> None:
        """Every shard written so far is in place (a remote output's uploads finished)."""

    def entry(self, shard: ShardFile) -> ShardEntry:
        """A finished shard, as the journal records it."""
        return ShardEntry(fs.basename(shard.tmp_path), shard.records, shard.bytes, shard.sha256)

    def whole(self, path: str, shard: ShardEntry) -> bool:
        """Whether a journaled shard's file is there as it was written."""
        raise NotImplementedError

    def keep_only(self, files: set[str]) -> None:
        """Remove from the build directory whatever a resumed run does not keep."""
        raise NotImplementedError

    def commit(self, results: list[SplitResult], metadata: dict[str, bytes]) -> None:
        """Put the dataset in place: shards under their final names, then `metadata` in
        order (the last one last)."""
        raise NotImplementedError

    def abort(self, keep: bool) -> None:
        """After a failure: remove the work (or, `keep`, leave it for --resume)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def check_held(self) -> None:
        """OutputError if this run no longer holds the output's lock (a local lock is held
        until the process ends)."""

    def __enter__(self) -> Output:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None:
                self.abort(keep=issubclass(exc_type, (KeyboardInterrupt, Interrupted)))
        finally:
            self.close()
