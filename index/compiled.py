"""The compiled loops (numba, the `fast` extra), loaded on first use, never compiled while
a user waits.

`module(name)` is the kernel module `name` (one of WHERE: index/text/tokens_numba.py,
index/lexical/postings_numba.py, index/lexical/maxscore_numba.py, index/dense/vectors_numba.py),
or None when numba is not installed or BUSCA_NUMBA=0 (then every caller takes its numpy path,
with the same results; the tests compare both). Every `*_numba` module loads through here.

Compiling the loops takes a minute on a busy machine the first time after an install, and
loading numba with the cached machine code up to a second or two: more than a new user's
first build or first queries cost without them. So nobody waits for the compiler:
- `for_build(name)`: the module if the kernels were compiled before (index/warm.py wrote its
  record, `warm_record`); else None (this build takes the numpy path) and, once per
  process, a separate process (`python -m busca.index.warm`) compiles every kernel into
  numba's cache, so the next build and queries find them;
- `ready(name)`: for queries, the module once loaded; until then None while a background
  thread loads the record's signatures from numba's cache (no compiling, about a second on a
  quiet machine), after having that separate process compile them when there is no record:
  queries take the numpy path meanwhile, so a one-shot question never waits for numba;
- `when_ready(name, then)`: a long-lived process (busca serve, shell) loads them at start,
  in its own thread when there is a record, so its first question finds them.
BUSCA_NUMBA_LOAD=wait loads (or compiles) at first use instead, in the caller's thread (the
tests use it to reach the compiled paths at once).

Builds use the loops from MIN_DOCUMENTS documents (tokenising) or MIN_POSTINGS postings."""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import machine
from .home.processes import alive

MIN_DOCUMENTS = 5_000
MIN_POSTINGS = 1_000_000
# every kernel module, by name -> where it lives under index/
WHERE = {"tokens_numba": "text.tokens_numba", "postings_numba": "lexical.postings_numba",
         "maxscore_numba": "lexical.maxscore_numba", "vectors_numba": "dense.vectors_numba"}
KERNELS = ("tokens_numba", "postings_numba", "maxscore_numba")  # what index/warm.py compiles
_loaded: dict[str, object] = {}
_ready: dict[str, object] = {}  # name -> module, or False (could not load: numpy path)
_lock = threading.Lock()
# numba is imported by the kernel modules and by unpickling the record (its signatures are
# numba types): one thread at a time, or two threads importing numba's modules in a
# different order make importlib refuse one of them (_DeadlockError: a caller's `search`
# starting the loading thread, then its `index` importing the kernels)
_importing = threading.RLock()
_started: dict[str, object] = {}  # "warm": the compiling process; "load": the loading thread
_waiting: dict[str, list] = {}  # name -> what to run once it is ready (`when_ready`)
_wanted: list[str] = []  # the modules asked for by `ready`, in order


def off() -> bool:
    """True when BUSCA_NUMBA=0: every caller takes its numpy path (read at each call: the
    tests switch it)."""
    return os.environ.get("BUSCA_NUMBA", "1") == "0"


def mode() -> str:
    """"0" (BUSCA_NUMBA=0: never), "wait" (BUSCA_NUMBA_LOAD=wait: load at first use,
    waiting) or "1" (in the background, the default)."""
    if off():
        return "0"
    return "wait" if os.environ.get("BUSCA_NUMBA_LOAD", "").strip() == "wait" else "1"


def module(name: str):
    """The kernel module `name` (WHERE) imported (its numba functions load or compile on
    first call), or None."""
    if mode() == "0":
        return None
    if name not in _loaded:
        with _importing:
            if name not in _loaded:
                try:
                    _array_functions_without_linalg()
                    _loaded[name] = importlib.import_module(f"{__package__}.{WHERE[name]}")
                except ImportError:
                    _loaded[name] = None
    return _loaded[name]


def _array_functions_without_linalg() -> None:
    """numba's array functions (numba.np.arraymath) imported without importing scipy.linalg.

    numba imports them at its first load of a compiled function, and their import checks for
    a BLAS by importing scipy.linalg (0.1–0.15 s on one core, before a build's tokenising
    workers can fork), only to choose how np.dot compiles; no busca kernel calls np.dot.
    During that import the check asks whether scipy is installed instead; numba's own check
    is put back at once, for what compiles later (its linear algebra runs it as it compiles)."""
    if "numba.np.arraymath" in sys.modules:
        return
    import numba.np.linalg as linalg

    check = getattr(linalg, "ensure_blas", None)
    if check is None:  # another numba: its own import, unchanged
        return
    linalg.ensure_blas = _scipy_installed
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        linalg.ensure_blas = check


def _scipy_installed() -> None:
    if importlib.util.find_spec("scipy") is None:
        raise ImportError("scipy is not installed")


def for_build(name: str):
    """The module for a build: at once if its kernels are compiled (or BUSCA_NUMBA=wait),
    else None and they are compiled in another process for the next time."""
    if mode() != "1":
        return module(name)
    if warm_record() is not None:
        return module(name)
    if module(name) is not None:
        _start_warming()
    return None


def ready(name: str):
    """The module with its kernels loaded, else None while a background thread loads them
    (from numba's cache when they were compiled before, else after another process has
    compiled them): the caller takes its numpy path meanwhile, so a one-shot `busca search`
    never waits for numba (a second and 130 MB), and a long-lived process that wants them from
    its first question loads them at start (`when_ready`)."""
    found = _ready.get(name)
    if found and not off():
        return found  # (one look at the environment a query, not mode's two: 0.7 µs)
    if mode() != "1":
        return module(name)
    if found is None:
        if not _installed():
            return None
        _start_loading(name)
        found = _ready.get(name)
    return found or None


def when_ready(name: str, then) -> None:
    """then() once `name` is ready (never if it cannot load): at once, the module loaded in
    this thread when its kernels were compiled before (busca serve and shell, before their
    first question); else in the loading thread, once another process has compiled them."""
    if mode() == "1" and _ready.get(name) is None and _installed():
        record = warm_record()
        if record is not None:
            _ready[name] = _load(name, record.get(name, {}))
        else:
            with _lock:
                if _ready.get(name) is None:
                    _waiting.setdefault(name, []).append(then)
                    then = None
            if then is None:
                ready(name)  # starts the loading
                return
    if ready(name) is not None:
        then()


@functools.cache
def _installed() -> bool:
    """numba is installed (found, not imported: importing it takes up to a second)."""
    return importlib.util.find_spec("numba") is not None


def _start_warming():
    """The process compiling every kernel into numba's cache, started once per process."""
    with _lock:
        if "warm" not in _started and _warming_elsewhere():
            _started["warm"] = None
        if "warm" not in _started:
            env = {**os.environ, "BUSCA_NUMBA": "1", "BUSCA_NUMBA_LOAD": "wait"}
            try:
                _started["warm"] = subprocess.Popen(
                    [sys.executable, "-m", f"{__package__}.warm"], env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                _started["warm"] = None
        return _started["warm"]


def _start_loading(name: str) -> None:
    """`name` loaded by the loading thread (started when none is running)."""
    with _lock:
        if name in _wanted:
            return
        _wanted.append(name)
        thread = _started.get("load")
        if thread is None or not thread.is_alive():
            _started["load"] = threading.Thread(target=_load_wanted, name="busca-kernels",
                                                daemon=True)
            _started["load"].start()


def _load_wanted() -> None:
    """Each wanted module's recorded signatures loaded from numba's cache (compiled first, in
    another process, when there is no record), then the module marked ready and what waited
    for it run; until no wanted module is left."""
    record = warm_record()
    if record is None:
        process = _start_warming()
        if process is not None:
            process.wait()
        while _warming_elsewhere():  # another process of the user's compiles them
            time.sleep(0.5)
        record = warm_record() or {}
    while True:
        with _lock:
            left = [n for n in _wanted if n not in _ready]
            if not left:
                _started.pop("load", None)
                return
        _ready[left[0]] = _load(left[0], record.get(left[0], {}))
        with _lock:
            waiting = _waiting.pop(left[0], []) if _ready[left[0]] else []
        for then in waiting:
            try:
                then()
            except Exception:  # noqa: BLE001 - a head start only: the first query redoes it
                pass


def _load(name: str, signatures: dict):
    """The module with its recorded signatures loaded, or False (the numpy path answers)."""
    try:
        loaded = module(name)
        for function, each in signatures.items():
            for signature in each:
                getattr(loaded, function).compile(signature)
    except Exception:  # noqa: BLE001 - a kernel that cannot load: the numpy path answers
        return False
    return loaded if loaded is not None else False


def _warming_elsewhere() -> bool:
    """True while a process other than ours compiles the kernels (index/warm.py's lock)."""
    path = record_path()
    try:
        pid = int(path.with_name(path.name + ".running").read_text()) if path else 0
    except (OSError, ValueError):
        return False
    return pid != os.getpid() and alive(pid)


def wait_ready(timeout: float | None = None) -> bool:
    """Wait for the background loading (tests, benchmarks); True when it has finished."""
    thread = _started.get("load")
    if thread is not None:
        thread.join(timeout)
        return not thread.is_alive()
    return True


def warm_record() -> dict | None:
    """What index/warm.py compiled ({module: {function: signatures}}) for these sources and
    this numba, or None."""
    path = record_path()
    try:
        if path is None:
            return None
        data = path.read_bytes()
        with _importing:
            return pickle.loads(data)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, ValueError):
        return None


def record_path() -> Path | None:
    """Where index/warm.py records its work: beside numba's cache of these modules when that
    is writable, else in the user's cache; its name stamps the sources and numba's version.
    BUSCA_KERNEL_RECORD names another file (tests)."""
    if os.environ.get("BUSCA_KERNEL_RECORD"):
        return Path(os.environ["BUSCA_KERNEL_RECORD"])
    try:
        from importlib.metadata import version
        numba_version = version("numba")
    except Exception:  # noqa: BLE001 - no numba: nothing to record
        return None
    here = Path(__file__).resolve().parent
    stamp = [numba_version, sys.version.split()[0]]
    for name in KERNELS:
        info = (here / f"{WHERE[name].replace('.', '/')}.py").stat()
        stamp.append(f"{info.st_mtime_ns}-{info.st_size}")
    key = hashlib.sha256("|".join(stamp).encode()).hexdigest()[:16]
    folder = here / "__pycache__"
    if not (folder.is_dir() and os.access(folder, os.W_OK)) and not os.access(here, os.W_OK):
        folder = machine.user_cache()
    return folder / f"busca-kernels-{key}.pickle" if folder is not None else None
