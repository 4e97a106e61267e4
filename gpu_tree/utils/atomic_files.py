"""Writing files atomically: the one way every output of the package reaches the disk.

A file is written to a temporary file in its own folder (so the rename cannot cross file
systems), flushed to disk, then renamed over the target: a reader sees the old file or the
new one, never half of one, and a failure leaves the old file untouched and no temporary
file behind. A symbolic link is followed (its target is replaced, the link stays); a target
that is no regular file (a FIFO, a device) is written through, never replaced.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def check_writable(path, inputs=()) -> Path:
    """Fail early, before any work, when ``path`` cannot be written, or is the same file as
    one of ``inputs`` (the paths a command reads: writing would destroy one)."""
    path = Path(path)
    for source in inputs:
        if source is None or str(source) == "-":
            continue
        with contextlib.suppress(OSError):  # either side missing: not the same file
            if os.path.samefile(path, source):
                raise ValueError(
                    f"cannot write {path}: it is the input {source}, which writing would "
                    "destroy; choose another output"
                )
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write {path}: the folder {folder} is not writable")
    return path


def _new_temporary(folder: Path, name: str) -> str:
    """Create an empty file of a fresh name in ``folder``, with the permissions open()
    would give (0666 less the umask), and return its path. mkstemp would make it 0600,
    and reading the umask means setting it, which races with other threads."""
    for _ in range(100):
        candidate = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return str(candidate)
    raise FileExistsError(f"cannot create a temporary file for {name} in {folder}")


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path in ``path``'s folder for a writer that wants a file name
    (matplotlib's savefig, say); on success it replaces ``path``, on any failure it is
    removed and ``path`` is left as it was."""
    check_writable(path)
    # A link is followed: the file it names is written, the link stays.
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        # A FIFO or a device: written through, as `cat > path` would. Renaming a file
        # over it would replace it (run as root, /dev/full became a regular file).
        yield str(path)
        return
    folder = path.parent
    temporary = _new_temporary(folder, path.name)
    try:
        yield temporary
        with open(temporary, "rb+") as written:
            os.fsync(written.fileno())
        with contextlib.suppress(FileNotFoundError):  # a file replaced keeps its mode
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_text(path, newline=""):
    """Write a UTF-8 text file atomically: ``with atomic_text(p) as out: out.write(...)``."""
    with atomic_path(path) as temporary:
        with open(temporary, "w", encoding="utf-8", newline=newline) as out:
            yield out
