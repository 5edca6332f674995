"""harmonics: the Harmonics pacing runtime (libharmonics-pace) from Python.

Pure Python over the C library through ctypes, so a Python job obeys the same
assignment file, slot and switch rules, fail-open bounds and reports as every
other user of the runtime (docs/pacing.md). ``harmonics.torch`` paces PyTorch
DDP's gradient all-reduce with it.

    rt = harmonics.runtime()        # the process-wide runtime (hm_pace_default)
    rt.comm_begin()                 # wait for this burst's slot (or not: fail-open)
    ...collectives...
    rt.comm_end()
    rt.stats()["period_us"]

The library is looked for in this order: ``HARMONICS_PACE_LIB`` (a path; when
set, nothing else is tried), a libharmonics-pace already loaded in this process
(the NCCL interposer's), the build tree beside this package (run from the
source tree), the libdir ``make install`` used, then the loader's own search
(``ctypes.util.find_library``, ``libharmonics-pace.so.2``).
"""

import ctypes
import ctypes.util
import functools
import os
import re
import socket
import threading

__all__ = [
    "ABI",
    "LIB_ENV",
    "NO_SLOT",
    "JobEnv",
    "PaceError",
    "Runtime",
    "assignment_in_environment",
    "job_env",
    "library_candidates",
    "load_library",
    "runtime",
]

LIB_ENV = "HARMONICS_PACE_LIB"
# hm_pace_stats_t below is the layout of -version-info 2:0:0 (soname .so.2); the
# caller allocates it, so another major must not be used (docs/pacing.md, C API).
ABI = 2
_SONAME = "libharmonics-pace.so.%d" % ABI
NO_SLOT = -(2**63)  # HM_PACE_NO_SLOT: do not wait


class PaceError(Exception):
    """The runtime cannot be used: the message names the file and the reason."""


class _Stats(ctypes.Structure):
    # hm_pace_stats_t (hm_pace.h), field for field.
    _fields_ = [
        ("iterations", ctypes.c_int64),
        ("bursts", ctypes.c_int64),
        ("paced", ctypes.c_int64),
        ("late", ctypes.c_int64),
        ("skipped", ctypes.c_int64),
        ("unpaced", ctypes.c_int64),
        ("period_us", ctypes.c_double),
        ("burst_offset_us", ctypes.c_double),
        ("burst_us", ctypes.c_double),
        ("wait_us", ctypes.c_double),
        ("slot_error_us", ctypes.c_double),
        ("slot_error_max_us", ctypes.c_double),
        ("iter_n", ctypes.c_uint64),
        ("iter_sum_us", ctypes.c_uint64),
        ("iter_sq_sum_us2", ctypes.c_uint64),
        ("compute_n", ctypes.c_uint64),
        ("compute_sum_us", ctypes.c_uint64),
        ("burst_n", ctypes.c_uint64),
        ("burst_sum_us", ctypes.c_uint64),
        ("slot_misses", ctypes.c_uint64),
        ("applied_epoch", ctypes.c_int64),
        ("burst_epoch", ctypes.c_int64),
    ]


_P = ctypes.c_void_p
# name: (restype, argtypes). Every one is checked at load: a file without them
# is not the runtime.
_API = {
    "hm_pace_default": (_P, []),
    "hm_pace_active": (ctypes.c_bool, [_P]),
    "hm_pace_iter_begin": (None, [_P]),
    "hm_pace_plan": (ctypes.c_int64, [_P, ctypes.c_int64]),
    "hm_pace_period_us": (ctypes.c_int64, [_P]),
    "hm_pace_comm_begin_slot": (None, [_P, ctypes.c_int64]),
    "hm_pace_comm_begin": (None, [_P]),
    "hm_pace_comm_end": (None, [_P]),
    "hm_pace_comm_end_at": (None, [_P, ctypes.c_int64]),
    "hm_pace_stats": (None, [_P, ctypes.POINTER(_Stats)]),
    "hm_pace_report": (ctypes.c_int, [_P]),
    "hm_pace_prio": (ctypes.c_int, [_P]),
    "hm_pace_mark_socket": (ctypes.c_int, [_P, ctypes.c_int]),
    "hm_pace_now_us": (ctypes.c_int64, []),
}

# Keys that can make a task paced; the same rule as the NCCL interposer's: with
# no assignment file and no mode other than "off", nothing can ever turn pacing on.
_ENV_MODE = "HARMONICS_MODE"
_ENV_ASSIGN_FILE = "HARMONICS_ASSIGN_FILE"


def assignment_in_environment(environ=None):
    """True when this task runs in a --comm-sched step (an assignment file, or a
    mode other than off): only then can the runtime ever wait."""
    env = os.environ if environ is None else environ
    mode = env.get(_ENV_MODE)
    return bool(env.get(_ENV_ASSIGN_FILE)) or (mode is not None and mode != "off")


# ---- the task's place in the job: Slurm's and torchrun's variables -------------

_UINT = re.compile(r"(0|[1-9][0-9]{0,8})\Z")  # decimal, no sign, no blanks, < 1e9


def _env_uint(env, key, hi):
    s = env.get(key)
    if s is None:
        return None
    if not _UINT.match(s) or int(s) > hi:
        raise ValueError("%s=%r: expected an integer in [0, %d]" % (key, s, hi))
    return int(s)


class JobEnv(object):
    """Where this task is: rank and world size in the job, local rank on its node,
    the node's index and name; source says which launcher's variables gave them
    ("torchrun", "slurm" or "none")."""

    __slots__ = ("rank", "world_size", "local_rank", "node", "node_name", "source")

    def __init__(self, rank, world_size, local_rank, node, node_name, source):
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.node = node
        self.node_name = node_name
        self.source = source

    def __repr__(self):
        return "JobEnv(rank=%r, world_size=%r, local_rank=%r, node=%r, node_name=%r, source=%r)" % (
            self.rank, self.world_size, self.local_rank, self.node, self.node_name, self.source)


_MAX_RANK = 16777215  # the runtime's HARMONICS_RANK bound


def job_env(environ=None):
    """Read the task's rank, world size, local rank and node strictly.

    torchrun's RANK/WORLD_SIZE/LOCAL_RANK/GROUP_RANK win over Slurm's
    SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID/SLURM_NODEID: under srun with one
    torchrun per node, Slurm's count the torchrun agents, torchrun's the workers.
    The two sets are never mixed for rank and world size. Missing values are None;
    a malformed one raises ValueError naming the variable and what is accepted.
    """
    env = os.environ if environ is None else environ
    if env.get("RANK") is not None:
        source = "torchrun"
        rank = _env_uint(env, "RANK", _MAX_RANK)
        world = _env_uint(env, "WORLD_SIZE", _MAX_RANK + 1)
        local = _env_uint(env, "LOCAL_RANK", _MAX_RANK)
        node = _env_uint(env, "GROUP_RANK", _MAX_RANK)
    elif env.get("SLURM_PROCID") is not None:
        source = "slurm"
        rank = _env_uint(env, "SLURM_PROCID", _MAX_RANK)
        world = _env_uint(env, "SLURM_NTASKS", _MAX_RANK + 1)
        local = _env_uint(env, "SLURM_LOCALID", _MAX_RANK)
        node = None
    else:
        source, rank, world, local, node = "none", None, None, None, None
    if node is None:
        node = _env_uint(env, "SLURM_NODEID", _MAX_RANK)
    if rank is not None and world is not None and rank >= world:
        raise ValueError("rank %d is not below the world size %d (%s variables)" % (rank, world, source))
    name = env.get("SLURMD_NODENAME") or socket.gethostname()
    return JobEnv(rank, world, local, node, name, source)


# ---- finding and loading the library --------------------------------------------

def _mapped_paths(marker):
    """Paths of the objects mapped in this process whose path contains marker."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return []
    seen = []
    for line in maps.splitlines():
        fields = line.split(None, 5)  # address perms offset dev inode [path]
        path = fields[5].strip() if len(fields) == 6 else ""
        if marker in path and path not in seen:
            seen.append(path)
    return seen


def _build_tree_dirs():
    # python/harmonics/ in the source tree: the library is in src/pace/.libs of an
    # in-tree build, or of build/ (scripts/build.sh's default).
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [os.path.join(top, "src", "pace", ".libs"),
            os.path.join(top, "build", "src", "pace", ".libs")]


def library_candidates(environ=None):
    """The paths or names load_library() tries, in order."""
    env = os.environ if environ is None else environ
    explicit = env.get(LIB_ENV)
    if explicit is not None:
        return [explicit]  # the user's choice: no silent fallback to another copy
    out = _mapped_paths("/libharmonics-pace.so")  # the interposer's copy: one runtime
    for d in _build_tree_dirs():
        p = os.path.join(d, _SONAME)
        if os.path.exists(p):
            out.append(p)
    try:
        from harmonics import _config  # written by make: where make install put the library
        p = os.path.join(_config.LIBDIR, _SONAME)
        if os.path.exists(p):
            out.append(p)
    except ImportError:
        pass
    found = ctypes.util.find_library("harmonics-pace")
    if found:
        out.append(found)
    out.append(_SONAME)
    return out


def _check_abi(path):
    """A file named like another major of the library is refused by name."""
    real = os.path.realpath(path) if os.path.sep in path else path
    m = re.search(r"libharmonics-pace\.so\.([0-9]+)", os.path.basename(real))
    if m and int(m.group(1)) != ABI:
        raise PaceError("%s: libharmonics-pace ABI %s, this package needs %d" % (path, m.group(1), ABI))


class _Lib(object):
    """The library twice over one dlopen handle: `wait` (ctypes.CDLL) releases the
    GIL for the calls that may sleep or write files; `fast` (ctypes.PyDLL) keeps it
    for the sub-microsecond ones, which a then-callback on gloo's thread would
    otherwise pay with a GIL round trip."""

    def __init__(self, path):
        self.path = path
        self.wait = ctypes.CDLL(path, use_errno=True)
        self.fast = ctypes.PyDLL(path, handle=self.wait._handle)


def _open(path):
    _check_abi(path)
    try:
        lib = _Lib(path)
    except OSError as e:
        raise PaceError("%s: cannot load: %s" % (path, e))
    for name, (res, args) in _API.items():
        for dll in (lib.wait, lib.fast):
            try:
                fn = getattr(dll, name)
            except AttributeError:
                raise PaceError("%s: not libharmonics-pace (no symbol %s)" % (path, name))
            fn.restype = res
            fn.argtypes = args
    return lib


_lock = threading.Lock()
_libs = {}
_runtime = None


def load_library(environ=None):
    """The first candidate that loads and has the hm_pace_* API (cached).
    PaceError names what was tried and why each failed."""
    errors = []
    for cand in library_candidates(environ):
        with _lock:
            if cand in _libs:
                return _libs[cand]
        try:
            lib = _open(cand)
        except PaceError as e:
            errors.append(str(e))
            continue
        with _lock:
            return _libs.setdefault(cand, lib)
    raise PaceError("libharmonics-pace not found or not usable (set %s to its path): %s"
                    % (LIB_ENV, "; ".join(errors)))


class Runtime(object):
    """The process-wide runtime (hm_pace_default(): one per process, shared with
    the NCCL interposer and any explicit caller, freed at exit after a final report).
    Every method is one C call; none raises once constructed:

    comm_begin(), comm_begin_slot(slot), plan(ready_us) -> slot, iter_begin(),
    comm_end(), comm_end_at(us), prio() -> class or -1, period_us(), now_us(),
    mark_socket(fd) -> DSCP, -1 (no class: unchanged) or -2 (setsockopt failed),
    active(), stats() -> dict, report() -> 0 or errno; hm_pace.h says what each does.
    """

    def __init__(self, lib):
        p = lib.wait.hm_pace_default()
        if not p:
            raise PaceError("hm_pace_default: out of memory")
        self.lib = lib
        self.handle = ctypes.c_void_p(p)
        self.address = p
        h, fast, wait = self.handle, lib.fast, lib.wait
        # partial: no Python frame per call. wait: may sleep (up to two periods) or
        # write the report (plan and iter_begin, at most once per second).
        self.comm_begin = functools.partial(wait.hm_pace_comm_begin, h)
        self.comm_begin_slot = functools.partial(wait.hm_pace_comm_begin_slot, h)
        self.plan = functools.partial(wait.hm_pace_plan, h)
        self.iter_begin = functools.partial(wait.hm_pace_iter_begin, h)
        self.comm_end = functools.partial(fast.hm_pace_comm_end, h)
        self.comm_end_at = functools.partial(fast.hm_pace_comm_end_at, h)
        self.prio = functools.partial(fast.hm_pace_prio, h)
        self.period_us = functools.partial(fast.hm_pace_period_us, h)
        self.mark_socket = functools.partial(fast.hm_pace_mark_socket, h)
        self.now_us = fast.hm_pace_now_us

    def active(self):
        return bool(self.lib.fast.hm_pace_active(self.handle))

    def stats(self):
        """hm_pace_stats() as a dict (the report's figures; docs/pacing.md)."""
        s = _Stats()
        self.lib.fast.hm_pace_stats(self.handle, ctypes.byref(s))
        return {name: getattr(s, name) for name, _ in _Stats._fields_}

    def report(self):
        """Write the report file now; 0, or the errno why not (ENOENT: none configured)."""
        if self.lib.wait.hm_pace_report(self.handle) == 0:
            return 0
        return ctypes.get_errno()

    def function_address(self, name):
        """Address of hm_pace_<name> for C callers (e.g. a CUDA host function)."""
        return ctypes.cast(getattr(self.lib.wait, "hm_pace_" + name), ctypes.c_void_p).value


def runtime(environ=None):
    """The process-wide Runtime (created on first use; PaceError when the library
    cannot be loaded). The C runtime reads the assignment from the environment when
    it is created: set HARMONICS_RANK before the first call to choose the rank."""
    global _runtime
    with _lock:
        if _runtime is not None:
            return _runtime
    rt = Runtime(load_library(environ))
    with _lock:
        if _runtime is None:
            _runtime = rt
        return _runtime
