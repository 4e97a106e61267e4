"""Where numba caches the compiled kernels, and the one-time notice that it is compiling.

numba compiles a kernel on its first call and, with ``cache=True``, keeps the result on
disk. It tries, in order (``numba/core/caching.py``, ``CacheImpl._locator_classes``):
``NUMBA_CACHE_DIR`` when set; ``__pycache__`` beside the kernel's source; the user-wide
folder ``~/.cache/numba`` (``$XDG_CACHE_HOME``); and takes the first one it can write.
Where it can write none, the decorator itself raises "cannot cache function ...: no
locator available" when the module is imported. That is a read-only install (a system
site-packages, a Docker image run as another user with ``docker run -u``, where HOME is
``/``), where every ``gputree`` command failed, ``--version`` included.

:func:`choose_cache_folder` runs before any kernel is decorated (the packages
``kernels/cpu/`` and ``kernels/cuda/`` call it first) and leaves numba's own choice alone
wherever numba has one. Where it has none it sets numba's cache folder to
one of this user's in the temporary directory, and where even that cannot be written it
lets the kernels run uncached (compiled in memory, in every process) instead of failing.

CuPy, which compiles the split search's array code on a GPU, has the same need and no
fallback at all: importing it makes its kernel cache folder (``CUPY_CACHE_DIR``, else
``~/.cupy/kernel_cache``) and fails where that cannot be made, and its first compile fails
where the folder cannot be written. :func:`choose_cupy_cache_folder` runs before CuPy is
imported (``gpu_tree.backends.cuda``) and makes the same choice: CuPy's folder where it can
be written, else one of this user's in the temporary directory, else none (kernels
compiled in memory).

:func:`watch` wraps the disk cache of each kernel so that its first miss (numba is
about to compile) prints ``compiling kernels (first run only)`` once, on a terminal
(:func:`say_compiling_kernels`), so that a pause of several seconds is explained;
never into a pipe or a file, and never with ``gputree --quiet``
(:func:`set_compile_notice`). Under it, while a kernel compiles, a :class:`CompileLine`
counts the kernels done and names the one compiling, with the seconds spent. The miss is where numba-cuda's and numba's CPU
dispatchers both decide to compile; numba's event API (``numba:compile``) covers only
the CPU one.

This module imports nothing heavy (numba only inside its functions): the command line
sets the notice up before it knows whether a kernel will run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import sys
import tempfile
import threading
import time

# Where the kernels are cached: "numba" (numba's own choice: NUMBA_CACHE_DIR, __pycache__
# or the user-wide folder), "temporary" (a folder of this user's in the temporary
# directory) or "none" (nowhere: compiled in every process). Set by choose_cache_folder;
# None before it ran.
CACHE_MODE: str | None = None

TEMPORARY_FOLDER_PREFIX = "gpu_tree-numba-cache-"
# Where CuPy caches its kernels: "cupy" (CUPY_CACHE_DIR or ~/.cupy/kernel_cache),
# "temporary" or "none" (CUPY_CACHE_IN_MEMORY); None before choose_cupy_cache_folder ran
# or where it had nothing to do (CuPy not installed, or imported before it).
CUPY_CACHE_MODE: str | None = None
CUPY_TEMPORARY_FOLDER_PREFIX = "gpu_tree-cupy-cache-"
_lock = threading.Lock()


def _writable_folder(path, private: bool = False) -> bool:
    """Whether numba could cache in ``path`` (made if missing), as numba checks it: a
    temporary file can be created there. ``private``: also only this user may write it."""
    try:
        os.makedirs(path, mode=0o700 if private else 0o777, exist_ok=True)
        if private and not _owned_by_this_user_alone(path):
            return False
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def _owned_by_this_user_alone(path) -> bool:
    """A real folder (not a link) that this user owns and nobody else may write: numba
    loads its cache files with pickle, so a folder another user made first in a shared
    temporary directory, and filled, could run their code in this process."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


def _numba_user_wide_folder() -> str | None:
    try:
        from numba.misc.appdirs import AppDirs

        return AppDirs(appname="numba", appauthor=False).user_cache_dir
    except Exception:  # noqa: BLE001 - a numba without it: its own chain decides
        return None


def _temporary_folder(prefix: str = TEMPORARY_FOLDER_PREFIX) -> str | None:
    """This user's cache folder in the temporary directory; where a folder of that name
    is someone else's, a new one for this process (removed at exit); None where the
    temporary directory cannot be written either."""
    try:
        base = tempfile.gettempdir()  # FileNotFoundError where no candidate is usable
    except OSError:
        return None
    user = os.getuid() if hasattr(os, "getuid") else "user"
    shared = os.path.join(base, f"{prefix}{user}")
    if _writable_folder(shared, private=True):
        return shared
    try:
        own = tempfile.mkdtemp(prefix=prefix, dir=base)
    except OSError:
        return None
    atexit.register(shutil.rmtree, own, ignore_errors=True)
    return own


def choose_cache_folder(kernels_folder) -> str:
    """Make sure numba can cache the kernels of ``kernels_folder`` (the kernel source root,
    its stage packages and the device-shared sources beside them), or run them uncached;
    returns :data:`CACHE_MODE`. A user's ``NUMBA_CACHE_DIR`` is kept wherever numba can
    use it; one it cannot write numba passes over itself, and it is replaced only where
    numba would otherwise have no folder at all. Decided once per process."""
    global CACHE_MODE
    with _lock:
        if CACHE_MODE is None:
            CACHE_MODE = _choose(kernels_folder)
    return CACHE_MODE


def _choose(kernels_folder) -> str:
    from numba.core import config

    # numba caches a kernel beside the file that defines it: in the root's __pycache__ for
    # the device-shared sources, in each stage package's own for the rest.
    beside = [os.path.join(folder, "__pycache__") for folder in _source_folders(kernels_folder)]
    if config.CACHE_DIR and _writable_folder(config.CACHE_DIR):
        return "numba"
    if all(_writable_folder(path) for path in beside):
        return "numba"
    user_wide = _numba_user_wide_folder()
    if user_wide and _writable_folder(user_wide):
        return "numba"
    folder = _temporary_folder()
    if folder is not None:
        config.CACHE_DIR = folder
        return "temporary"
    allow_uncached(_cpu_dispatcher_class())
    return "none"


def _source_folders(kernels_folder) -> list[str]:
    """``kernels_folder`` and its packages (``cpu/``, ``cuda/``): where kernel source lies."""
    subfolders = [
        entry.path
        for entry in os.scandir(kernels_folder)
        if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py"))
    ]
    return [str(kernels_folder), *sorted(subfolders)]


def choose_cupy_cache_folder() -> str | None:
    """Before CuPy is imported: point ``CUPY_CACHE_DIR`` at a folder this user can write
    (CuPy's own choice wherever it can be written), or where there is none, have CuPy keep
    its kernels in memory (``CUPY_CACHE_IN_MEMORY``) and name a folder that exists, which
    its import then leaves alone. Returns :data:`CUPY_CACHE_MODE`; does nothing where CuPy
    is not installed (no folder is made for it) or is already imported. Decided once per
    process."""
    global CUPY_CACHE_MODE
    with _lock:
        if CUPY_CACHE_MODE is None and "cupy" not in sys.modules and _cupy_installed():
            CUPY_CACHE_MODE = _choose_for_cupy(os.environ)
    return CUPY_CACHE_MODE


def _cupy_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def _choose_for_cupy(environ) -> str:
    # CuPy reads both at import (cupy/cuda/_compiler_cache.py): CUPY_CACHE_DIR, else
    # os.path.expanduser("~/.cupy/kernel_cache").
    folder = environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")
    # A relative folder (no home to expand "~" to) would land in the working directory.
    if os.path.isabs(folder) and _writable_folder(folder):
        return "cupy"
    temporary = _temporary_folder(CUPY_TEMPORARY_FOLDER_PREFIX)
    if temporary is not None:
        environ["CUPY_CACHE_DIR"] = temporary
        return "temporary"
    environ["CUPY_CACHE_IN_MEMORY"] = "1"  # CuPy then neither reads nor writes the folder
    if not os.path.isdir(folder):
        environ["CUPY_CACHE_DIR"] = os.path.abspath(os.sep)
    return "none"


def _cpu_dispatcher_class():
    from numba.core.dispatcher import Dispatcher

    return Dispatcher


def allow_uncached(dispatcher_class) -> None:
    """Let ``cache=True`` on gpu_tree's kernels fall back to no cache where numba finds
    no folder to cache them in ("cannot cache function ..."), rather than fail at import.
    Only the kernels of this package: other functions keep numba's behaviour."""
    original = getattr(dispatcher_class, "enable_caching", None)
    if original is None or getattr(original, "gpu_tree_uncached", False):
        return

    def enable_caching(self):
        try:
            original(self)
        except RuntimeError:
            if not getattr(self.py_func, "__module__", "").startswith(__package__ + "."):
                raise
            # self._cache stays numba's NullCache: compiled in memory, never saved.

    enable_caching.gpu_tree_uncached = True
    dispatcher_class.enable_caching = enable_caching


def allow_uncached_cuda(cuda) -> None:
    """:func:`allow_uncached` for the CUDA module's dispatchers, where nothing can be
    written (the class is found from a device function compiled without a cache)."""
    if CACHE_MODE != "none":
        return
    try:
        probe = cuda.jit(device=True)(_probe)
    except Exception:  # noqa: BLE001 - a CUDA module that compiles no device function here
        return
    allow_uncached(type(probe))


def _probe():  # pragma: no cover - never called, only decorated
    pass


def watch(namespace) -> None:
    """Say once, when the first of the kernels in ``namespace`` (a module's globals)
    misses its disk cache, that the kernels are being compiled; and let them run as
    Python where a small fit asks (:mod:`.python_mode`)."""
    from . import python_mode

    python_mode.register(namespace)
    for kernel in list(namespace.values()):
        cache = getattr(kernel, "_cache", None)
        load = getattr(cache, "load_overload", None)
        if not hasattr(kernel, "py_func") or load is None or getattr(load, "watched", False):
            continue
        cache.load_overload = _announcing_misses(load)


def _announcing_misses(load):
    def load_overload(*args, **kwargs):
        found = load(*args, **kwargs)
        if found is None:
            say_compiling_kernels(cached=CACHE_MODE != "none")
        return found

    load_overload.watched = True
    return load_overload


# -- the notice ------------------------------------------------------------------------------
COMPILE_NOTICE = "compiling kernels (first run only)"
UNCACHED_COMPILE_NOTICE = "compiling kernels (no writable cache folder: every run)"
# "terminal": on standard error where it is a terminal; "never". ``program`` prefixes the
# line ("gputree" on the command line).
# "line": the CompileLine drawn after the notice (None before).
_notice = {"when": "terminal", "program": "gpu_tree", "said": False, "line": None}
_listening = False  # whether numba's compile events reach the line


def set_compile_notice(when: str, program: str | None = None):
    """Say that the kernels compile on a terminal (``"terminal"``, the default) or
    ``"never"``; returns a function that restores the previous setting."""
    if when not in ("terminal", "never"):
        raise ValueError(f"when must be 'terminal' or 'never', not {when!r}")
    before = (_notice["when"], _notice["program"])
    _notice["when"] = when
    if program is not None:
        _notice["program"] = program

    def restore():
        _notice["when"], _notice["program"] = before

    return restore


def say_compiling_kernels(cached: bool = True, stream=None) -> bool:
    """Write the compile notice on ``stream`` (default: standard error) where it is a
    terminal, once per process; returns whether it was written."""
    stream = sys.stderr if stream is None else stream
    with _lock:
        if _notice["said"] or _notice["when"] == "never":
            return False
        try:
            if stream is None or not stream.isatty():
                return False
            text = COMPILE_NOTICE if cached else UNCACHED_COMPILE_NOTICE
            line = f"{_notice['program']}: {text}"
            tqdm = sys.modules.get("tqdm")
            if tqdm is not None:  # progress bars may be drawn: write above them
                tqdm.tqdm.write(line, file=stream)
            else:
                stream.write(line + "\n")
            stream.flush()
        except (AttributeError, OSError, ValueError):  # no isatty; a closed stream
            return False
        _notice["said"] = True
    _follow_compiles(stream, _notice["program"])
    return True


# -- the line under the notice ---------------------------------------------------------------
class CompileLine:
    """While numba compiles the package's kernels, one line under the notice on a terminal:
    how many it has compiled, the seconds spent and which it is compiling now, e.g.
    ``gputree: compiling kernels: 3 done, 21 s, now score_splits`` (the name last: a
    narrow terminal cuts the line's end);
    redrawn every ``redraw_seconds`` (one kernel can take half a minute), and cleared
    when a kernel is done and none follows. How many are left is not known ahead: numba
    compiles a kernel when it is first called, and which kernels a fit calls depends on
    its data and settings.

    It follows numba's ``numba:compile`` events (CPU kernels; numba-cuda's dispatchers
    send none), counting a kernel whose compile began while no other of the package's was
    compiling: the helpers a kernel calls compile inside it. ``package``: the modules
    whose functions count."""

    def __init__(self, stream, program, package=__package__, redraw_seconds=1.0):
        self.stream = stream
        self.program = program
        self.package = package
        self.redraw_seconds = redraw_seconds
        self.done = 0
        self.started = None  # when the first kernel began compiling
        self.current = None  # the kernel compiling now
        self.depth = 0  # the package's compiles in progress, nested
        self.bar = None
        self.stop = None
        self.redrawer = None

    def text(self) -> str:
        seconds = time.perf_counter() - self.started
        return (
            f"{self.program}: compiling kernels: {self.done} done, {seconds:.0f} s, "
            f"now {self.current}"
        )

    def _ours(self, event) -> str | None:
        dispatcher = (event.data or {}).get("dispatcher")
        function = getattr(dispatcher, "py_func", None)
        module = getattr(function, "__module__", "") or ""
        if module == self.package or module.startswith(self.package + "."):
            return function.__name__
        return None

    def on_start(self, event):
        name = self._ours(event)
        if name is None:
            return
        self.depth += 1
        if self.depth == 1:
            if self.started is None:
                self.started = time.perf_counter()
            self.current = name
            self._open()

    def on_end(self, event):
        if self._ours(event) is None or self.depth == 0:
            return
        self.depth -= 1
        if self.depth == 0:
            self.done += 1
            self._close()

    def _open(self):
        try:
            from tqdm import tqdm

            self.bar = tqdm(file=self.stream, bar_format="{desc}", leave=False, dynamic_ncols=True)
            self.bar.set_description_str(self.text())
        except Exception:  # noqa: BLE001 - a display must never stop a compile
            self.bar = None
            return
        self.stop = threading.Event()
        self.redrawer = threading.Thread(
            target=self._redraw, args=(self.bar, self.stop), daemon=True
        )
        self.redrawer.start()

    def _redraw(self, bar, stop):
        while not stop.wait(self.redraw_seconds):
            try:
                bar.set_description_str(self.text())
            except Exception:  # noqa: BLE001 - a closed terminal: stop drawing
                return

    def _close(self):
        if self.bar is None:
            return
        self.stop.set()
        self.redrawer.join(timeout=5)
        try:
            self.bar.close()
        except Exception:  # noqa: BLE001 - a display must never stop a compile
            pass
        self.bar = None


def _follow_compiles(stream, program):
    """Draw a :class:`CompileLine` under the notice from now on."""
    global _listening
    with _lock:
        _notice["line"] = CompileLine(stream, program)
        if _listening:
            return
        try:
            from numba.core import event
        except ImportError:  # pragma: no cover - numba is a dependency
            return

        class Listener(event.Listener):  # one for the process: it draws the current line
            def on_start(self, ev):
                line = _notice["line"]
                if line is not None:
                    line.on_start(ev)

            def on_end(self, ev):
                line = _notice["line"]
                if line is not None:
                    line.on_end(ev)

        event.register("numba:compile", Listener())
        _listening = True
