"""harmonics.torch: hold PyTorch DDP's gradient all-reduce to the job's slot.

    import harmonics.torch
    model = harmonics.torch.pace(torch.nn.parallel.DistributedDataParallel(net))

pace() registers a DDP communication hook that, once per iteration, begins the
burst through the C runtime (libharmonics-pace: same assignment file, switch
rules, fail-open bounds and report as every other paced program), then runs the
default all-reduce (allreduce_hook's division and all-reduce). Outside a
--comm-sched step it returns the model untouched: no hook, no library loaded.
Pacing errors never reach the training loop: the first one turns pacing off
with one PaceWarning. docs/pacing.md, "PyTorch (DDP)", is the reference.
"""

from __future__ import absolute_import  # "torch" below is PyTorch, never this module

if __name__ == "torch":
    # This file was imported as the top-level "torch": its directory is on sys.path.
    raise ImportError("%s was imported as 'torch': put the directory above the "
                      "harmonics package on sys.path, not the package itself" % __file__)

import os
import socket
import sys
import threading
import warnings
import weakref

import torch as _torch
import torch.distributed as _dist
from torch.nn.parallel import DistributedDataParallel as _DDP

import harmonics as _hm

__all__ = ["PaceWarning", "SWITCH_ENV", "pace", "pacer", "stats"]

# "off" keeps a job that runs in a --comm-sched step unpaced; "on" (the default) paces.
SWITCH_ENV = "HARMONICS_TORCH_PACE"
_RANK_ENV = "HARMONICS_RANK"


class PaceWarning(RuntimeWarning):
    """Pacing is off for this process (the message says why); training goes on."""


_warned = set()
_warn_lock = threading.Lock()


def _warn(key, msg):
    """One warning per key: "pace" for everything pace() refuses (a job that calls
    it in a loop warns once), a pacer for the error that turned its pacing off
    (gloo may run two completion callbacks at once)."""
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    text = "harmonics.torch: " + msg
    try:
        warnings.warn(text, PaceWarning, stacklevel=3)
    except Exception:  # -W error turns it into an exception: still not into training
        try:
            sys.stderr.write("warning: %s\n" % text)
        except Exception:
            pass


def _value(fut):
    return fut.value()[0]


# ---- CUDA: hold the stream, not the host (as libharmonics-nccl.so does) ----------

def _find_launch_host_func():
    """cudaLaunchHostFunc of the CUDA runtime PyTorch already loaded; never loads one."""
    import ctypes

    cands = _hm._mapped_paths("/libcudart") + [None, "libcudart.so.13", "libcudart.so.12",
                                                "libcudart.so.11.0", "libcudart.so"]
    for c in cands:
        try:
            lib = ctypes.CDLL(c, mode=os.RTLD_NOLOAD | os.RTLD_LAZY) if c else ctypes.CDLL(None)
        except OSError:
            continue
        fn = getattr(lib, "cudaLaunchHostFunc", None)
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            return fn
    raise _hm.PaceError("no cudaLaunchHostFunc in this process: cannot hold a CUDA stream")


class _CudaHold(object):
    """hm_pace_comm_begin/comm_end as CUDA host functions (no Python, no GIL on the
    CUDA thread). The hold runs on a side stream that waits for the compute stream:
    when the stream reaches it the burst is ready, the runtime plans from that time
    and sleeps to the slot; the all-reduce is issued on that side stream, so the
    collective starts at the slot while the rest of backward keeps computing, and
    later buckets queue behind it on the communication stream."""

    def __init__(self, rt):
        self.launch = _find_launch_host_func()
        self.begin_fn = rt.function_address("comm_begin")
        self.end_fn = rt.function_address("comm_end")
        self.arg = rt.address
        self.streams = {}  # device index -> [hold stream, stamp stream]

    def _pair(self, device):
        pair = self.streams.get(device.index)
        if pair is None:
            pair = [_torch.cuda.Stream(device=device), _torch.cuda.Stream(device=device)]
            self.streams[device.index] = pair
        return pair

    def _enqueue(self, stream, fn):
        rc = self.launch(stream.cuda_stream, fn, self.arg)
        if rc != 0:
            raise _hm.PaceError("cudaLaunchHostFunc failed (CUDA error %d)" % rc)

    def hold(self, device):
        hold = self._pair(device)[0]
        hold.wait_stream(_torch.cuda.current_stream(device))
        self._enqueue(hold, self.begin_fn)
        return hold

    def stamp_end(self, device):
        # Its own stream: the end stamp must not delay DDP's use of the result.
        stamp = self._pair(device)[1]
        stamp.wait_stream(_torch.cuda.current_stream(device))
        self._enqueue(stamp, self.end_fn)


# ---- gloo: the class on the process's TCP sockets ------------------------------------

def _mark_sockets(rt):
    """Give every connected TCP socket of this process the class in force (IP_TOS =
    DSCP << 2, the runtime's table, as harmonics-emujob marks its own). gloo's pairs
    are all connected once its group exists, and Python cannot reach them any other
    way; the rendezvous store's connection is the job's too. Returns how many."""
    n = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink("/proc/self/fd/" + name).startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(int(name)))  # a duplicate: closing it is harmless
        except (OSError, ValueError):
            continue  # closed meanwhile, or not a socket Python knows
        try:
            if s.type == socket.SOCK_STREAM and s.family in (socket.AF_INET, socket.AF_INET6):
                s.getpeername()  # connected (OSError otherwise)
                if rt.mark_socket(s.fileno()) >= 0:
                    n += 1
        except OSError:
            pass
        finally:
            s.close()
    return n


# ---- the hook ---------------------------------------------------------------------

class _Pacer(object):
    """State of the hook of one paced model.

    Iteration boundary: the bucket of index 0. DDP's reducer launches a backward's
    buckets strictly in index order (Reducer::mark_bucket_ready), so bucket 0 is the
    first communication of every synchronised backward, however early it is ready;
    under no_sync() the hook is not called at all, so accumulation steps are not
    iterations and the next synchronised backward starts again at bucket 0. No
    time threshold is involved (the NCCL interposer's gap rule needs one because
    NCCL shows no iteration structure).
    """

    def __init__(self, group, rt, job, rank, mode, mark_gloo):
        self.group = group
        self.rt = rt
        self.job = job
        self.rank = rank
        self.mode = mode  # "cpu", "cuda", or "interposer" (libharmonics-nccl.so holds NCCL)
        self.mark_gloo = mark_gloo  # gloo: the class goes on the process's TCP sockets
        self.marked_prio = -1  # class last put on them (-1: none yet)
        self.on = True
        self.error = None  # the exception that turned pacing off
        self.iterations = 0  # synchronised backwards seen (buckets of index 0)
        self.buckets = 0
        self.holds = 0  # bursts begun through the runtime (at most one per iteration)
        self._begin = rt.comm_begin
        self._end = rt.comm_end
        self._cuda = _CudaHold(rt) if mode == "cuda" else None
        # before(bucket, tensor), just ahead of the bucket's all-reduce, returns the
        # stream to issue it on (None: the current one) and whether its completion
        # stamps the burst's end (done). One method per mode: nothing is decided
        # per bucket that the model's device already decided.
        self.before = {"cpu": self._before_cpu, "cuda": self._before_cuda,
                       "interposer": self._before_interposer}[mode]
        self.done = self._done_cuda if mode == "cuda" else self._done_cpu

    def _before_cpu(self, bucket, tensor):
        self.buckets += 1
        if bucket.index() == 0:
            self.iterations += 1
            if self.mark_gloo and self.rt.prio() != self.marked_prio:
                self.marked_prio = self.rt.prio()  # a new epoch may bring a new class
                _mark_sockets(self.rt)
            # Plans from now (the burst is ready) and sleeps to the slot with the GIL
            # released; the rest of backward waits too (a CPU job computes on this
            # thread). Every bucket's completion extends the burst's end.
            self._begin()
            self.holds += 1
        return None, True

    def _before_cuda(self, bucket, tensor):
        self.buckets += 1
        stream = None
        if bucket.index() == 0:
            self.iterations += 1
            stream = self._cuda.hold(tensor.device)
            self.holds += 1
        return stream, bucket.is_last()

    def _before_interposer(self, bucket, tensor):
        # The interposer holds and stamps NCCL itself; an explicit mark makes it hold
        # the first collective after it, once per iteration, instead of its gap rule.
        self.buckets += 1
        if bucket.index() == 0:
            self.iterations += 1
            self.rt.iter_begin()
        return None, False

    def _done_cpu(self, fut):
        t = fut.value()[0]  # the all-reduce's own error propagates, as in allreduce_hook
        if self.on:
            try:
                self._end()
            except Exception as e:
                self.fail(e)
        return t

    def _done_cuda(self, fut):
        t = fut.value()[0]
        if self.on:
            try:
                self._cuda.stamp_end(t.device)
            except Exception as e:
                self.fail(e)
        return t

    def fail(self, exc):
        self.on = False
        self.error = exc
        _warn(self, "rank %s: pacing off after an internal error (%s: %s); training continues "
              "unpaced" % (self.rank, type(exc).__name__, exc))


def harmonics_pace_hook(state, bucket):
    """The DDP communication hook: pacing (never raises), then allreduce_hook's work."""
    tensor = bucket.buffer()
    group = state.group
    # As the default hook: divide first (no FP16 overflow), then sum.
    tensor.div_(group.size())
    stream, stamp = None, False
    if state.on:
        try:
            stream, stamp = state.before(bucket, tensor)
        except Exception as e:
            state.fail(e)
            stream, stamp = None, False
    if stream is None:
        fut = _dist.all_reduce(tensor, group=group, async_op=True).get_future()
    else:
        with _torch.cuda.stream(stream):
            fut = _dist.all_reduce(tensor, group=group, async_op=True).get_future()
    return fut.then(state.done if stamp else _value)


# ---- public ------------------------------------------------------------------------

_pacers = weakref.WeakKeyDictionary()  # model -> _Pacer; at most one (one burst per slot)


def _attach(model, environ):
    switch = environ.get(SWITCH_ENV)
    if switch is not None and switch not in ("on", "off"):
        raise ValueError("%s=%r: expected on or off" % (SWITCH_ENV, switch))
    if switch == "off" or not _hm.assignment_in_environment(environ):
        return  # not a --comm-sched step: no hook, no library, no cost
    if model in _pacers:
        return
    if len(_pacers):
        raise RuntimeError("another DDP model is already paced in this process: pace one "
                           "model per process (its bursts are the job's, one per slot)")
    job = _hm.job_env(environ)
    # torch.distributed's rank is the truth when it is up (always, with DDP): under
    # mp.spawn inside one Slurm task every process has the same SLURM_PROCID.
    rank = _dist.get_rank() if _dist.is_initialized() else job.rank
    if rank is not None and _RANK_ENV not in environ:
        os.environ[_RANK_ENV] = str(rank)  # the runtime's report name (%r) and messages
    rt = _hm.runtime(environ)
    backend = _dist.get_backend(model.process_group)
    param = next(model.module.parameters(), None)  # DDP keeps the module on one device
    if param is not None and param.is_cuda:
        if backend == "nccl" and _hm._mapped_paths("/libharmonics-nccl.so"):
            mode = "interposer"
        else:
            mode = "cuda"
    else:
        mode = "cpu"
    p = _Pacer(model.process_group, rt, job, rank, mode, backend == "gloo")
    model.register_comm_hook(p, harmonics_pace_hook)
    _pacers[model] = p


def pace(model):
    """Pace model's gradient all-reduce to the job's slot; returns model.

    model must be a torch.nn.parallel.DistributedDataParallel (TypeError otherwise,
    also outside a --comm-sched step, so the mistake shows before a job runs under
    Slurm). Call it once, before the first backward. Outside a --comm-sched step
    (no HARMONICS_ASSIGN_FILE, HARMONICS_MODE unset or off), or with
    HARMONICS_TORCH_PACE=off, nothing is registered. Any failure (library not
    found, malformed environment, a hook already registered, a second model)
    leaves the model unpaced with one PaceWarning.
    """
    if not isinstance(model, _DDP):
        raise TypeError("harmonics.torch.pace: expected a torch.nn.parallel."
                        "DistributedDataParallel, got %s" % type(model).__name__)
    try:
        _attach(model, os.environ)
    except Exception as e:
        _warn("pace", "not pacing: %s; training continues unpaced" % e)
    return model


def pacer(model):
    """The hook state of a paced model (counters: iterations, buckets, holds; on;
    error), or None when model is not paced."""
    return _pacers.get(model)


def stats(model):
    """The runtime's figures (harmonics.Runtime.stats: period_us, burst_us, paced,
    late, skipped, slot_misses, applied_epoch, ...) plus the hook's counters
    (hook_iterations, hook_buckets, hook_holds, pacing), or None when not paced."""
    p = _pacers.get(model)
    if p is None:
        return None
    s = p.rt.stats()
    s.update(hook_iterations=p.iterations, hook_buckets=p.buckets, hook_holds=p.holds,
             pacing=p.on)
    return s
