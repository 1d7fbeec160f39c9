"""The output directory: one run at a time, built aside, swapped in whole.

A local `--out DIR` is not written into while a run works. Everything happens in
a work directory beside it, `PARENT/.DIR.tfr-convert/`:

    lock        held (fcntl) by the live run, holding its pid; a dead run's lock is free
    journal     what is finished, for --resume (journal.py)
    new/        the dataset being built: shards under temporary names, then metadata
    committing  new/'s device and inode, written just before the swap: after a crash,
                the side of the swap that has them is the new dataset
    trash/      the old dataset, after the swap, while it is deleted

The commit is one atomic step: `new/` is renamed onto DIR (absent or an empty
directory) or exchanged with it (renameat2's RENAME_EXCHANGE), so at every moment
DIR holds the old dataset or the new one. Entries of DIR that are not the old
dataset's files (its manifest lists them) are carried over: hard-linked into
`new/` before the exchange, and what cannot be linked (folders) moved back after
it. A run killed after the swap is finished by the next run (`recover`), which
tells the two sides apart by the new tree's inode.

Where no sibling can be made on DIR's filesystem (DIR is a mount point, or its
parent is not writable) the work directory is `DIR/.tfr-convert/`: the commit
then moves files into DIR one by one (`dataset_info.json` of the old dataset
removed first, the new one written last), which is not atomic.

A remote DIR (an object store: no folders to swap, no rename) is another kind of
output with the same interface, base.Output: remote.py.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from typing import Any

from ..dataset.naming import COMMITTING, INFO, TEMP_PREFIX, WORK_FOLDER
from ..errors import OutputError
from ..storage import fs
from ..storage.fingerprints import InputFiles
from .base import Output, dataset_files, sha256_of
from .journal import Journal, ShardEntry
from .shards import SplitResult


class Lock:
    """An exclusive lock on a file (fcntl: released by the kernel when its holder
    dies, and not inherited by forked workers), holding the holder's pid."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, what: str) -> None:
        import fcntl

        for _ in range(20):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:
                continue  # its folder was removed by a run that just ended
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise OutputError(f"{self.path}: cannot lock: {e.strerror}") from None
                raise OutputError(
                    f"{what}: another tfr-convert run (pid {holder}) is writing this output; "
                    "wait for it to end, or stop it, and run again"
                ) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file that the previous holder unlinked while we waited to open it
                self._fd = fd
                try:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                except OSError:
                    self.release()
                    raise
                return
            os.close(fd)
        raise OutputError(f"{self.path}: cannot take the lock (it keeps being replaced)")

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not supported."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), b)


def _share(source: str, target: str) -> None:
    """A shard of another version at `target` too: a hard link (no byte copied or
    written), else a copy (a file system without links; the kernel copies where it can)."""
    if os.path.lexists(target):
        os.remove(target)  # a kill between two links: done again
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _identity(path: str) -> str | None:
    """A directory's device and inode, which a rename keeps; None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _acquire(lock: Lock, path: str, work: str) -> None:
    try:
        lock.acquire(path)
    except OSError as e:
        try:
            os.rmdir(work)  # if this run made it and nothing is in it
        except OSError:
            pass
        where = e.filename if isinstance(e.filename, str) else lock.path
        raise OutputError(f"{where}: cannot create the work directory: {e.strerror}") from None


class LocalOutput(Output):
    """A local output directory: built beside DIR and swapped in whole (see above)."""

    def __init__(
        self,
        path: str,
        overwrite: bool,
        resume: bool,
        identity: dict[str, Any] | None = None,
        inputs: InputFiles | None = None,
        lock: Lock | None = None,
    ) -> None:
        """`lock`: this output's lock, taken earlier by `claim` (and released by its taker)."""
        super().__init__(overwrite, resume, identity, inputs)
        self._lock: Lock | None = None
        self._own_lock = lock is None
        self.path = os.path.realpath(path)
        self._open_local(lock)

    @staticmethod
    def _work_of(path: str) -> tuple[bool, str]:
        """(in place, the work folder) of the output at `path` (real), its parent made."""
        if os.path.lexists(path) and not os.path.isdir(path):
            raise OutputError(f"{path}: exists and is not a directory")
        parent = os.path.dirname(path)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{parent}: cannot create the output's parent directory: {e.strerror}") from None
        in_place = os.path.isdir(path) and (
            os.stat(path).st_dev != os.stat(parent).st_dev or not os.access(parent, os.W_OK | os.X_OK)
        )
        return in_place, (
            os.path.join(path, WORK_FOLDER)
            if in_place
            else os.path.join(parent, f".{os.path.basename(path)}{WORK_FOLDER}")
        )

    @classmethod
    def claim(cls, path: str) -> Lock:
        """The lock of the output at `path`, taken now: a run holds it from before it
        reads its first input (the CLI takes it so) until after its commit."""
        path = os.path.realpath(path)
        _, work = cls._work_of(path)
        lock = Lock(os.path.join(work, "lock"))
        _acquire(lock, path, work)
        return lock

    # ------------------------------------------------------------ opening

    def _open_local(self, lock: Lock | None) -> None:
        path = self.path
        self.in_place, self.work = self._work_of(path)
        self.build = os.path.join(self.work, "new")
        self.journal = Journal(os.path.join(self.work, "journal"))
        if lock is not None and os.path.dirname(lock.path) != self.work:
            raise OutputError(f"{path}: its lock was taken at {lock.path}, not in {self.work}")
        self._lock = lock or Lock(os.path.join(self.work, "lock"))
        if lock is None:
            _acquire(self._lock, path, self.work)
        try:
            _remove(os.path.join(self.work, "trash"))  # an old dataset a killed run was deleting
            self.recover()
            partial = os.path.isdir(self.build) or self.journal.exists()
            # --resume after a run that had finished (or whose commit `recover` just finished)
            self.finished = self.resume and not partial and self._done_already()
            if self.resuming:
                self.entries = self.journal.read(self.identity, self.inputs)
            if not self.finished:
                self._check_start(partial)
                os.makedirs(self.build, exist_ok=True)
        except BaseException:
            self.close()
            raise

    def _entries(self) -> list[str]:
        """What DIR holds, besides this run's own work directory."""
        if not os.path.isdir(self.path):
            return []
        return [e for e in os.listdir(self.path) if not (self.in_place and e == WORK_FOLDER)]

    def _check_start(self, partial: bool) -> None:
        self._refuse_start(bool(self._entries()), partial)
        if partial and not self.resume:
            for entry in ("new", "journal", COMMITTING, "old"):
                _remove(os.path.join(self.work, entry))

    # ------------------------------------------------------------ writing

    def whole(self, path: str, shard: ShardEntry) -> bool:
        return os.path.isfile(path) and os.path.getsize(path) == shard.bytes and sha256_of(path) == shard.sha256

    def keep_only(self, files: set[str]) -> None:
        for entry in os.listdir(self.build):
            if entry not in files:
                _remove(os.path.join(self.build, entry))

    def _write_file(self, name: str, data: bytes) -> None:
        tmp = self.temp_path(name)
        with fs.naming(tmp), fs.open_file(tmp, "wb") as f:
            f.write(data)
        fs.rename(tmp, fs.join(self.build, name))

    def commit(self, results: list[SplitResult], metadata: dict[str, bytes]) -> None:
        """Put the dataset in place: shards under their final names, then `metadata`
        in order (last one last), then the swap."""
        for result in results:
            for shard in result.shards:
                final = fs.join(self.build, shard.final_name)
                if shard.shared:
                    _share(shard.tmp_path, final)
                elif shard.tmp_path != final:
                    fs.rename(shard.tmp_path, final)
        if self.in_place:
            self._commit_in_place(results, metadata)
            return
        for name, data in metadata.items():
            self._write_file(name, data)
        self._temps.clear()
        replace = os.path.isdir(self.path) and os.listdir(self.path)
        if replace:
            self._carry_over()
        # The new tree's identity (device and inode) moves with it in the swap: after a crash,
        # the side of the swap that has it is the new dataset, whatever the two trees hold (a
        # manifest's digest cannot tell a dataset from the same command's damaged output).
        self._write_atomically(os.path.join(self.work, COMMITTING), _identity(self.build))
        if not replace:
            os.replace(self.build, self.path)  # replaces an empty directory in one step
        elif not exchange(self.build, self.path):
            os.replace(self.path, os.path.join(self.work, "old"))  # no exchange here: a brief window
            os.replace(self.build, self.path)
        try:
            self._finish_swap()
        except OSError as e:
            where = e.filename or self.work
            raise OutputError(
                f"{where}: {e.strerror}: the new dataset is in place in {self.path}, but tidying up after it "
                f"failed; the next tfr-convert run into this output finishes that from {self.work}"
            ) from None

    @staticmethod
    def _write_atomically(path: str, text: str) -> None:
        with open(path + ".tmp", "w", encoding="ascii") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def _carry_over(self) -> None:
        """Before the exchange: DIR's entries that are not its dataset's, hard-linked into
        the new build (folders are moved back after it); a folder where the new dataset
        puts a file stops the commit."""
        os.chmod(self.build, stat.S_IMODE(os.stat(self.path).st_mode))  # the user's folder keeps its mode
        old = dataset_files(self.path) if self.overwrite else set()
        new = set(os.listdir(self.build))
        for entry in os.listdir(self.path):
            source = os.path.join(self.path, entry)
            if entry in old:
                continue
            folder = os.path.isdir(source) and not os.path.islink(source)
            if entry in new:
                if folder:
                    raise OutputError(
                        f"{source}: a folder is in the way of the new dataset's file of that name; move it away"
                    )
                continue  # a file named like one of the new dataset's: --overwrite replaces it
            if not folder:
                try:
                    os.link(source, os.path.join(self.build, entry), follow_symlinks=False)
                except OSError:
                    pass  # moved back after the swap instead

    def _finish_swap(self) -> None:
        """After the swap: entries of the old DIR that are not its dataset's move back."""
        old = next((p for p in (os.path.join(self.work, "old"), self.build) if os.path.isdir(p)), None)
        if old is not None:
            own = dataset_files(old)
            for entry in os.listdir(old):
                if entry not in own and not os.path.lexists(os.path.join(self.path, entry)):
                    os.replace(os.path.join(old, entry), os.path.join(self.path, entry))
            # out of the way in one step: once its removal has begun, its manifest may be gone
            os.replace(old, os.path.join(self.work, "trash"))
        for entry in ("journal", COMMITTING, "trash"):
            _remove(os.path.join(self.work, entry))

    def recover(self) -> None:
        """Finish the commit of a run killed after it began the swap."""
        marker = os.path.join(self.work, COMMITTING)
        if not os.path.exists(marker):
            return
        if not os.path.isdir(self.path) and os.path.isdir(self.build):
            os.replace(self.build, self.path)  # killed inside the no-exchange window
        with open(marker, encoding="ascii") as f:
            expected = f.read().strip()
        if _identity(self.path) != expected:
            os.remove(marker)  # not swapped: the build is kept, for --resume
            return
        self._finish_swap()

    def _commit_in_place(self, results: list[SplitResult], metadata: dict[str, bytes]) -> None:
        """Files moved into DIR one by one (no work directory can be made beside DIR)."""
        old = dataset_files(self.path) if self.overwrite else set()
        if INFO in old and os.path.lexists(os.path.join(self.path, INFO)):
            # first: a crash from here on leaves no directory claiming to be complete (and
            # a run after such a crash finds it gone already)
            os.remove(os.path.join(self.path, INFO))
        new = {s.final_name for r in results for s in r.shards} | set(metadata)
        for entry in sorted(old - new - {INFO}):
            if os.path.lexists(os.path.join(self.path, entry)):
                os.remove(os.path.join(self.path, entry))
        for name in sorted(new - set(metadata)):
            os.replace(os.path.join(self.build, name), os.path.join(self.path, name))
        for name, data in metadata.items():
            # under a temporary name the next run knows as this tool's (dataset_files),
            # so a crash between the write and the rename leaves nothing of the user's kind
            temporary = os.path.join(self.path, f"{TEMP_PREFIX}{name}")
            with open(temporary, "wb") as f:
                f.write(data)
            os.replace(temporary, os.path.join(self.path, name))
        self._temps.clear()
        for entry in ("new", "journal", COMMITTING):
            _remove(os.path.join(self.work, entry))

    # ------------------------------------------------------------ ending

    def abort(self, keep: bool) -> None:
        if not keep and not os.path.exists(os.path.join(self.work, COMMITTING)):
            # (with the swap begun, what is there is for the next run's `recover`)
            for entry in ("new", "journal", COMMITTING):
                _remove(os.path.join(self.work, entry))
        self._temps.clear()

    def close(self) -> None:
        if self._lock is not None and self._own_lock:
            release(self._lock)
        self._lock = None


def release(lock: Lock) -> None:
    """Let go of an output's lock, and of its work folder when nothing is kept in it."""
    lock.release()
    try:
        os.rmdir(os.path.dirname(lock.path))
    except OSError:
        pass
