#!/usr/bin/env python3
"""harmonics.torch.pace on real DDP training: 2 processes, gloo on 127.0.0.1.

Run by tests/python/run.sh (make check). Without arguments it is the driver: it
checks the pure-Python parts, then starts 2 worker processes per scenario (this
script with --worker, the environment torchrun would give them) and checks what
they report. Every scenario trains the same model on the same data, so each must
end with the same parameters as the unpaced run: the hook's all-reduce is DDP's.

Scenarios:
  inactive   no HARMONICS_* variable: no hook, no library; pace()'s cost
  paced      an assignment file (50 ms slots, class 2, epoch 7), 10 steps of 2
             micro-batches (no_sync): one hold per step, not per bucket nor per
             micro-batch; the period; the report files; the class on gloo's sockets
  free       a free-running assignment: never waits; a second model is refused with
             one warning; the hook's cost per iteration
  bogus_lib  HARMONICS_PACE_LIB names a file that is not the library: one warning
  corrupt    a garbage assignment file, replaced by a valid one halfway: fail-open
             with the runtime's one warning, then paced
  hook_error the hook's pacing call raises after 3 steps: one warning, pacing off,
             training goes on
  cuda-standin  the CUDA path's host functions over the stand-in CUDA runtime
             (tests/pace/standin.h) when it was built: held to the slot on the
             stream, the caller not held, the end stamped
Prints "pace-torch: ..." lines with the measured costs.
"""

import contextlib
import datetime
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

STEPS = 10  # synchronised steps (optimizer steps)
ACCUM = 2  # micro-batches per step: ACCUM - 1 of them under no_sync()
WIDTH = 256  # Linear(256, 256): 256 KiB of weights per layer
LAYERS = 6
BUCKET_MB = 0.25  # about one layer per bucket: several buckets per iteration
PERIOD_MIN_US = 60000  # slots at least this long, and 3 unpaced steps (a loaded machine)
WORKER_TIMEOUT_S = 240
PG_TIMEOUT_S = 90


# ---- worker ------------------------------------------------------------------------

def build_model(torch):
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers)


def train(torch, model, opt, rank, steps, first_step=0, on_step=None):
    """steps synchronised steps of ACCUM micro-batches; returns each step's end time."""
    ends = []
    for s in range(first_step, first_step + steps):
        g = torch.Generator().manual_seed(1000 * s + rank)  # data of step s, rank rank
        for a in range(ACCUM):
            x = torch.randn(32, WIDTH, generator=g)
            y = torch.randn(32, WIDTH, generator=g)
            ctx = model.no_sync() if a < ACCUM - 1 else contextlib.nullcontext()
            with ctx:
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
        opt.step()
        opt.zero_grad()
        ends.append(time.monotonic())
        if on_step:
            on_step(s)
    return ends


def digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def tos_of_connected_tcp():
    """IP_TOS of every connected TCP socket of this process (gloo's pairs, the
    store's connections; IPv6 ones are v4-mapped here, loopback)."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink("/proc/self/fd/" + name).startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(int(name)))
        except (OSError, ValueError):
            continue
        try:
            if s.type == socket.SOCK_STREAM and s.family in (socket.AF_INET, socket.AF_INET6):
                s.getpeername()
                out.append(s.getsockopt(socket.IPPROTO_IP, socket.IP_TOS))
        except OSError:
            pass
        finally:
            s.close()
    return out


class FakeBucket(object):
    """What the hook uses of dist.GradBucket (for the cost measurement)."""

    def __init__(self, index, tensor, last):
        self._i, self._t, self._last = index, tensor, last

    def index(self):
        return self._i

    def buffer(self):
        return self._t

    def is_last(self):
        return self._last


def hook_cost(torch, ht, pacer):
    """What pacing adds to an iteration of 4 buckets when it never waits, us: the
    hook's own work per bucket (before() + the end stamp in the completion
    callback) against allreduce_hook's callback alone, in a tight loop, medians
    of 7 blocks; the all-reduce itself is the same call in both hooks. Also the
    runtime's two calls alone."""
    bufs = [torch.zeros(1024) for _ in range(4)]
    buckets = [FakeBucket(i, bufs[i], i == 3) for i in range(4)]
    done = torch.futures.Future()
    done.set_result([bufs[0]])

    def per_iteration(fn, n):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n * 1e6

    def pacing_work():
        for b in buckets:
            pacer.before(b, b.buffer())
            pacer.done(done)

    def plain_work():
        for b in buckets:
            done.value()[0]

    rt = pacer.rt

    def c_calls():
        rt.comm_begin()
        rt.comm_end()

    a, b, c = [], [], []
    for _ in range(7):
        a.append(per_iteration(pacing_work, 2000))
        b.append(per_iteration(plain_work, 2000))
        c.append(per_iteration(c_calls, 2000))
    return {"pacing_us": median(a) - median(b), "c_calls_us": median(c)}


def worker(name, outdir):
    import torch
    import torch.distributed as dist
    import harmonics
    import harmonics.torch as ht

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method=os.environ["HM_TEST_INIT"], rank=rank,
                            world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
    model = torch.nn.parallel.DistributedDataParallel(build_model(torch),
                                                      bucket_cap_mb=BUCKET_MB)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    res = {"rank": rank}

    t0 = time.perf_counter()
    ret = ht.pace(model)
    res["pace_call_us"] = (time.perf_counter() - t0) * 1e6
    res["same_object"] = ret is model
    pacer = ht.pacer(model)
    res["hooked"] = pacer is not None

    if name == "inactive":
        # pace() again and again: what a job outside --comm-sched pays, once.
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            ht.pace(model)
        res["pace_repeat_us"] = (time.perf_counter() - t0) / n * 1e6
        res["lib_mapped"] = bool(harmonics._mapped_paths("/libharmonics-pace.so"))

    on_step = None
    if name == "hook_error":
        def on_step(s):
            if s == 2:  # from step 3 on the runtime call raises
                def boom():
                    raise RuntimeError("injected failure")
                pacer._begin = boom
    if name == "corrupt":
        ends = train(torch, model, opt, rank, STEPS // 2)
        res["stats_half"] = ht.stats(model)
        if rank == 0:  # the agent's way: a temporary name, then rename
            path = os.environ["HARMONICS_ASSIGN_FILE"]
            with open(path + ".new", "w") as f:
                f.write(os.environ["HM_TEST_GOOD_ASSIGN"])
            os.rename(path + ".new", path)
        dist.barrier()
        time.sleep(0.3)  # the runtime polls the file every 100 ms
        ends += train(torch, model, opt, rank, STEPS - STEPS // 2, first_step=STEPS // 2)
    else:
        ends = train(torch, model, opt, rank, STEPS, on_step=on_step)
    res["step_ends"] = ends
    res["digest"] = digest(model)
    res["stats"] = ht.stats(model)
    if pacer is not None:
        res["pacing_on"] = pacer.on
        res["prio"] = pacer.rt.prio()
    res["tos"] = tos_of_connected_tcp()

    if name == "free":
        # A second model would put a second burst into every iteration: refused.
        other = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
        res["second_same"] = ht.pace(other) is other
        res["second_hooked"] = ht.pacer(other) is not None
        res["cost"] = hook_cost(torch, ht, pacer)
    if name in ("inactive", "bogus_lib"):
        # Nothing was registered: DDP still takes a hook.
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        try:
            model.register_comm_hook(dist.group.WORLD, allreduce_hook)
            res["hook_slot_free"] = True
        except Exception as e:
            res["hook_slot_free"] = "%s: %s" % (type(e).__name__, e)
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(outdir, "result.%d.json" % rank), "w") as f:
        json.dump(res, f)
    return 0


# ---- the CUDA path over the stand-in CUDA runtime ------------------------------------

def cuda_standin(lib_path, outdir):
    """_CudaHold over the STAND-IN CUDA runtime (tests/pace/standin.h, built with
    the NCCL interposer): its streams are real queues run by threads, so the
    runtime's own hm_pace_comm_begin/comm_end run as host functions there, as on a
    GPU. torch.cuda is replaced by stand-in streams; nothing else is."""
    import ctypes
    import types
    import harmonics
    import harmonics.torch as ht

    class Op(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char * 48), ("start_us", ctypes.c_int64),
                    ("end_us", ctypes.c_int64)]

    sl = ctypes.CDLL(lib_path)
    sl.cudaStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    sl.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    sl.standin_stream_ops.argtypes = [ctypes.c_void_p, ctypes.POINTER(Op), ctypes.c_int]
    launch = sl.cudaLaunchHostFunc
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

    class Stream(object):
        def __init__(self, device=None):
            h = ctypes.c_void_p()
            assert sl.cudaStreamCreate(ctypes.byref(h)) == 0
            self.cuda_stream = h.value

        def wait_stream(self, other):
            pass  # the stand-in "compute stream" never has work pending

    compute = Stream()
    ht._torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Stream=Stream, current_stream=lambda device=None: compute))
    ht._find_launch_host_func = lambda: launch
    rt = harmonics.runtime()
    hold = ht._CudaHold(rt)
    dev = types.SimpleNamespace(index=0)
    returned = []
    for _ in range(5):
        t0 = time.perf_counter()
        stream = hold.hold(dev)  # the hold is queued; the caller goes on
        returned.append((time.perf_counter() - t0) * 1e6)
        sl.cudaStreamSynchronize(stream.cuda_stream)
        hold.stamp_end(dev)
    sl.cudaStreamSynchronize(hold._pair(dev)[1].cuda_stream)
    ops = (Op * 16)()
    n = sl.standin_stream_ops(hold._pair(dev)[0].cuda_stream, ops, 16)
    res = {"returned_us": returned, "stats": rt.stats(),
           "hold_ends": [ops[i].end_us for i in range(min(n, 16))],
           "stamps": sl.standin_stream_ops(hold._pair(dev)[1].cuda_stream, ops, 16)}
    with open(os.path.join(outdir, "result.json"), "w") as f:
        json.dump(res, f)
    return 0


# ---- driver ------------------------------------------------------------------------

failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)
    return cond


def now_us():
    return time.time_ns() // 1000


def assign_text(**kv):
    return "".join("HARMONICS_%s=%s\n" % (k, v) for k, v in kv.items())


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HARMONICS_", "SLURM_")) and
           k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "MASTER_ADDR",
                     "MASTER_PORT")}
    env["GLOO_SOCKET_IFNAME"] = "lo"
    env["OMP_NUM_THREADS"] = "1"  # two ranks on a shared 2-core machine
    return env


def run_scenario(name, extra_env, workdir):
    """Start 2 ranks; returns ([result per rank], [stderr text per rank])."""
    d = os.path.join(workdir, name)
    os.makedirs(d)
    base = clean_env()
    base.update(extra_env)
    # A file store, not a TCP port picked here and bound later by rank 0:
    # another test of a parallel `make check` took such a port once.
    base["HM_TEST_INIT"] = "file://" + os.path.join(d, "rendezvous")
    base["WORLD_SIZE"] = "2"
    base["GROUP_RANK"] = "0"
    procs, errs = [], []
    for r in range(2):
        env = dict(base, RANK=str(r), LOCAL_RANK=str(r))
        err = open(os.path.join(d, "stderr.%d" % r), "w+")
        errs.append(err)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                       name, d], env=env, stdout=err, stderr=err,
                                      start_new_session=True))
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            rcs.append("timeout")
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    results, texts = [], []
    for r in range(2):
        errs[r].seek(0)
        texts.append(errs[r].read())
        errs[r].close()
        path = os.path.join(d, "result.%d.json" % r)
        results.append(json.load(open(path)) if os.path.exists(path) else None)
    ok = all(rc == 0 for rc in rcs) and all(results)
    if not check(ok, "%s: both ranks ran to the end (exit %s)" % (name, rcs)):
        for r in range(2):
            print("--- %s rank %d stderr:\n%s" % (name, r, texts[r][-3000:]))
        return None, texts
    return results, texts


def read_report(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            out[k] = v
    return out


def intervals(ends):
    return [b - a for a, b in zip(ends, ends[1:])]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def unit_checks():
    """The pure-Python parts: environment rules, job variables, library errors."""
    import harmonics

    ae = harmonics.assignment_in_environment
    check(not ae({}) and not ae({"HARMONICS_MODE": "off"}) and ae({"HARMONICS_MODE": "crux"})
          and ae({"HARMONICS_ASSIGN_FILE": "/x", "HARMONICS_MODE": "off"}),
          "unit: an assignment file or a mode other than off is a --comm-sched step")
    j = harmonics.job_env({"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "GROUP_RANK": "2",
                           "SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURMD_NODENAME": "n3"})
    check((j.rank, j.world_size, j.local_rank, j.node, j.node_name, j.source) ==
          (5, 8, 1, 2, "n3", "torchrun"), "unit: torchrun's variables win over Slurm's: %r" % j)
    j = harmonics.job_env({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
                           "SLURM_NODEID": "1", "SLURMD_NODENAME": "n1"})
    check((j.rank, j.world_size, j.local_rank, j.node, j.node_name, j.source) ==
          (3, 4, 1, 1, "n1", "slurm"), "unit: Slurm's variables: %r" % j)
    j = harmonics.job_env({})
    check(j.rank is None and j.world_size is None and j.source == "none",
          "unit: no launcher variables: %r" % j)
    for env, word in (({"RANK": "1x"}, "RANK='1x'"), ({"RANK": "-1"}, "RANK='-1'"),
                      ({"RANK": " 1"}, "RANK=' 1'"), ({"SLURM_PROCID": "0", "SLURM_NTASKS": "0x2"},
                                                      "SLURM_NTASKS"),
                      ({"RANK": "4", "WORLD_SIZE": "4"}, "not below the world size 4"),
                      ({"SLURM_NODEID": "n1"}, "SLURM_NODEID")):
        try:
            harmonics.job_env(env)
            check(False, "unit: %r refused" % env)
        except ValueError as e:
            check(word in str(e), "unit: %r refused naming it: %s" % (env, e))
    bogus = os.path.abspath(__file__)
    try:
        harmonics.load_library({harmonics.LIB_ENV: bogus})
        check(False, "unit: a file that is not the library is refused")
    except harmonics.PaceError as e:
        check(bogus in str(e) and "cannot load" in str(e),
              "unit: a file that is not the library is refused by name: %s" % e)
    try:
        harmonics.load_library({harmonics.LIB_ENV: "/nonexistent/libharmonics-pace.so.1"})
        check(False, "unit: another ABI is refused")
    except harmonics.PaceError as e:
        check("ABI 1" in str(e), "unit: another ABI is refused by name: %s" % e)
    lib = os.environ.get(harmonics.LIB_ENV)
    if lib:
        rt = harmonics.Runtime(harmonics.load_library({harmonics.LIB_ENV: lib}))
        check(rt.plan(rt.now_us()) == harmonics.NO_SLOT and not rt.active(),
              "unit: without an assignment the runtime never plans a wait")


def main():
    import harmonics

    lib = os.environ.get(harmonics.LIB_ENV)
    print("library: %s" % (lib or harmonics.library_candidates()))
    unit_checks()
    workdir = tempfile.mkdtemp(prefix="hm_pace_hook.")
    keep = {"HARMONICS_PACE_LIB": lib} if lib else {}

    # inactive: the reference parameters, no hook, pace()'s cost.
    res, errs = run_scenario("inactive", dict(keep), workdir)
    if res is None:
        return 1
    ref = res[0]["digest"]
    check(res[1]["digest"] == ref, "inactive: both ranks end with the same parameters")
    for r in res:
        check(r["same_object"] and not r["hooked"] and r["stats"] is None,
              "inactive rank %d: pace() returned the model, nothing registered" % r["rank"])
        check(r["hook_slot_free"] is True,
              "inactive rank %d: DDP's hook slot is still free (%s)" % (r["rank"], r["hook_slot_free"]))
        check(not r["lib_mapped"], "inactive rank %d: the library was not even loaded" % r["rank"])
    check("harmonics" not in errs[0] + errs[1], "inactive: no warning")
    inactive_iter = median(intervals(res[0]["step_ends"][1:])) * 1e3
    print("pace-torch: inactive: no hook registered, per-iteration cost 0 (DDP's own all-reduce); "
          "pace() %.2f us (first call %.1f us); step %.2f ms"
          % (res[0]["pace_repeat_us"], res[0]["pace_call_us"], inactive_iter))

    # paced: slots well above the unpaced step (this machine, now), shift 10 ms,
    # class 2, epoch 7.
    period = max(PERIOD_MIN_US, int(3 * inactive_iter * 1e3) // 10000 * 10000)
    d = os.path.join(workdir, "paced-files")
    os.makedirs(d)
    now = now_us()
    with open(os.path.join(d, "assign"), "w") as f:
        f.write(assign_text(MODE="harmonics", JOB_ID=42, PERIOD_US=period, SHIFT_US=10000,
                            ORIGIN_US=now, GUARD_US=5000, PRIO=2, EPOCH=7,
                            VALID_UNTIL_US=now + 600 * 10**6))
    env = dict(keep, HARMONICS_ASSIGN_FILE=os.path.join(d, "assign"),
               HARMONICS_REPORT_FILE=os.path.join(d, "report.%r"))
    res, errs = run_scenario("paced", env, workdir)
    if res is not None:
        check(all(r["digest"] == ref for r in res),
              "paced: the same parameters as without pacing (the hook's all-reduce is DDP's)")
        check("harmonics" not in errs[0] + errs[1], "paced: no warning")
        for r in res:
            s, k = r["stats"], r["rank"]
            check(r["hooked"] and r["pacing_on"], "paced rank %d: hook registered, pacing on" % k)
            check(s["bursts"] == STEPS and s["hook_holds"] == STEPS and s["hook_iterations"] == STEPS,
                  "paced rank %d: one hold per step: bursts %d, holds %d for %d steps of %d "
                  "micro-batches" % (k, s["bursts"], s["hook_holds"], STEPS, ACCUM))
            check(s["hook_buckets"] >= 2 * STEPS,
                  "paced rank %d: several buckets per step (%d buckets, %d steps)"
                  % (k, s["hook_buckets"], STEPS))
            check(s["paced"] == STEPS and s["unpaced"] == 0,
                  "paced rank %d: every burst held to a slot (paced %d, late %d, skipped %d)"
                  % (k, s["paced"], s["late"], s["skipped"]))
            check(s["applied_epoch"] == 7 and s["burst_epoch"] == 7,
                  "paced rank %d: applied epoch 7 (%d)" % (k, s["applied_epoch"]))
            check(0.8 * period <= s["period_us"] <= 2.5 * period,
                  "paced rank %d: measured period %.0f us for slots of %d us"
                  % (k, s["period_us"], period))
            step = median(intervals(r["step_ends"][1:])) * 1e6
            check(0.9 * period <= step <= 2.2 * period,
                  "paced rank %d: median step %.0f us (unpaced %.0f us)"
                  % (k, step, inactive_iter * 1e3))
            check(s["wait_us"] > 0 and s["burst_n"] == STEPS and s["burst_us"] > 0,
                  "paced rank %d: waits %.0f us, bursts end-stamped (%d, mean %.0f us)"
                  % (k, s["wait_us"], s["burst_n"], s["burst_us"]))
            check(r["prio"] == 2 and r["tos"] and all(t == 26 << 2 for t in r["tos"]),
                  "paced rank %d: class 2 on every connected TCP socket (IP_TOS %s, AF31 = %d)"
                  % (k, r["tos"], 26 << 2))
            rep_path = os.path.join(d, "report.%d" % k)
            if check(os.path.exists(rep_path), "paced rank %d: report %s written" % (k, rep_path)):
                rep = read_report(rep_path)
                want = {"RANK": str(k), "JOB_ID": "42", "MODE": "harmonics", "EPOCH": "7",
                        "PERIOD_ASSIGNED_US": str(period), "BURSTS": str(STEPS),
                        "PACED": str(STEPS), "APPLIED_EPOCH": "7"}
                bad = {key: rep.get(key) for key, v in want.items() if rep.get(key) != v}
                check(not bad and abs(float(rep["PERIOD_US"]) - s["period_us"]) <= 1,
                      "paced rank %d: the report agrees (%s)" % (k, bad or "PERIOD_US=" + rep["PERIOD_US"]))
        print("pace-torch: paced: period %.1f ms for %.0f ms slots, wait %.1f ms, burst %.2f ms, "
              "slot error %.2f ms (max %.2f), late %d, skipped %d"
              % (res[0]["stats"]["period_us"] / 1e3, period / 1e3, res[0]["stats"]["wait_us"] / 1e3,
                 res[0]["stats"]["burst_us"] / 1e3, res[0]["stats"]["slot_error_us"] / 1e3,
                 res[0]["stats"]["slot_error_max_us"] / 1e3, res[0]["stats"]["late"],
                 res[0]["stats"]["skipped"]))

    # free: an assignment without slots (period 0): the hook never waits.
    env = dict(keep, HARMONICS_MODE="harmonics", HARMONICS_PERIOD_US="0", HARMONICS_EPOCH="3")
    res, errs = run_scenario("free", env, workdir)
    if res is not None:
        check(all(r["digest"] == ref for r in res), "free: the same parameters as without pacing")
        for r in res:
            s = r["stats"]
            check(s["bursts"] == STEPS and s["unpaced"] == STEPS and s["paced"] == 0 and
                  s["wait_us"] == 0 and s["burst_epoch"] == 3,
                  "free rank %d: %d bursts, none waited, governed by epoch 3" % (r["rank"], s["bursts"]))
            k = r["rank"]
            check(r["second_same"] and not r["second_hooked"] and
                  errs[k].count("PaceWarning: harmonics.torch: not pacing: another DDP model is "
                                "already paced") == 1 and errs[k].count("Warning") == 1,
                  "free rank %d: a second model is not paced, one warning: %s"
                  % (k, errs[k].strip().splitlines()[:1]))
        c = res[0]["cost"]
        print("pace-torch: free-running: pacing adds %.1f us per iteration of 4 buckets to "
              "allreduce_hook's work (hm_pace_comm_begin + hm_pace_comm_end: %.2f us)"
              % (c["pacing_us"], c["c_calls_us"]))

    # bogus_lib: an assignment, but HARMONICS_PACE_LIB is not the library.
    d = os.path.join(workdir, "bogus-files")
    os.makedirs(d)
    with open(os.path.join(d, "libharmonics-pace.so.2"), "w") as f:
        f.write("not a library\n")
    env = {"HARMONICS_MODE": "harmonics", "HARMONICS_PERIOD_US": "0",
           "HARMONICS_PACE_LIB": os.path.join(d, "libharmonics-pace.so.2")}
    res, errs = run_scenario("bogus_lib", env, workdir)
    if res is not None:
        check(all(r["digest"] == ref for r in res), "bogus_lib: training ran, same parameters")
        for k in range(2):
            n = errs[k].count("PaceWarning: harmonics.torch: not pacing:")
            check(n == 1 and d in errs[k] and errs[k].count("Warning") == 1 and
                  "harmonics-pace:" not in errs[k],
                  "bogus_lib rank %d: exactly one warning, naming the file (%d): %s"
                  % (k, n, errs[k].strip().splitlines()[:1]))
            check(not res[k]["hooked"] and res[k]["hook_slot_free"] is True,
                  "bogus_lib rank %d: nothing registered" % k)

    # corrupt: a garbage assignment file; halfway a valid one replaces it.
    d = os.path.join(workdir, "corrupt-files")
    os.makedirs(d)
    now = now_us()
    with open(os.path.join(d, "assign"), "w") as f:
        f.write(assign_text(MODE="harmonics", PERIOD_US="fifty", ORIGIN_US=now))
    good = assign_text(MODE="harmonics", PERIOD_US=PERIOD_MIN_US, SHIFT_US=0, ORIGIN_US=now,
                       EPOCH=9, VALID_UNTIL_US=now + 600 * 10**6)
    env = dict(keep, HARMONICS_ASSIGN_FILE=os.path.join(d, "assign"), HM_TEST_GOOD_ASSIGN=good)
    res, errs = run_scenario("corrupt", env, workdir)
    if res is not None:
        check(all(r["digest"] == ref for r in res), "corrupt: training ran, same parameters")
        half = STEPS // 2
        for r in res:
            k, h, s = r["rank"], r["stats_half"], r["stats"]
            lines = [l for l in errs[k].splitlines() if "harmonics" in l]
            check(len(lines) == 2 and "not pacing (fail-open)" in lines[0] and
                  "HARMONICS_PERIOD_US" in lines[0] and "pacing resumed" in lines[1],
                  "corrupt rank %d: the runtime's one warning, then resumed: %s" % (k, lines))
            check(h["bursts"] == half and h["unpaced"] == half and h["applied_epoch"] == -1,
                  "corrupt rank %d: garbage: %d bursts ran free, no epoch applied"
                  % (k, h["bursts"]))
            check(s["bursts"] == STEPS and s["paced"] == STEPS - half and s["applied_epoch"] == 9,
                  "corrupt rank %d: valid again: %d of %d bursts paced, epoch %d"
                  % (k, s["paced"], STEPS - half, s["applied_epoch"]))

    # hook_error: the pacing call raises from step 3 on.
    env = dict(keep, HARMONICS_MODE="harmonics", HARMONICS_PERIOD_US="0")
    res, errs = run_scenario("hook_error", env, workdir)
    if res is not None:
        check(all(r["digest"] == ref for r in res), "hook_error: training ran, same parameters")
        for r in res:
            k, s = r["rank"], r["stats"]
            n = errs[k].count("PaceWarning: harmonics.torch: rank %d: pacing off after an internal "
                              "error (RuntimeError: injected failure)" % k)
            check(n == 1 and errs[k].count("Warning") == 1 and "harmonics-pace:" not in errs[k],
                  "hook_error rank %d: exactly one warning: %s" % (k, errs[k].strip().splitlines()[:1]))
            check(not r["pacing_on"] and s["hook_holds"] == 3 and s["bursts"] == 3,
                  "hook_error rank %d: pacing off after 3 holds (holds %d, bursts %d)"
                  % (k, s["hook_holds"], s["bursts"]))

    # The CUDA path's host functions, over the stand-in CUDA runtime when it was built.
    standin = os.environ.get("HM_TEST_STANDIN")
    if standin and os.path.exists(standin):
        d = os.path.join(workdir, "cuda-standin")
        os.makedirs(d)
        now = now_us()
        env = dict(clean_env(), HARMONICS_MODE="harmonics", HARMONICS_PERIOD_US=str(PERIOD_MIN_US),
                   HARMONICS_SHIFT_US="7000", HARMONICS_ORIGIN_US=str(now), HARMONICS_EPOCH="4")
        if lib:
            env["HARMONICS_PACE_LIB"] = lib
        with open(os.path.join(d, "stderr"), "w+") as err:
            try:
                rc = subprocess.call([sys.executable, os.path.abspath(__file__), "--cuda-standin",
                                      standin, d], env=env, stdout=err, stderr=err,
                                     timeout=WORKER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                rc = "timeout"
            err.seek(0)
            text = err.read()
        if check(rc == 0, "cuda-standin: ran (exit %s) %s" % (rc, text[-2000:] if rc else "")):
            r = json.load(open(os.path.join(d, "result.json")))
            s = r["stats"]
            check(s["bursts"] == 5 and s["paced"] == 5 and s["burst_n"] == 5 and
                  s["applied_epoch"] == 4,
                  "cuda-standin: 5 bursts begun and ended by host functions on the streams "
                  "(bursts %d, paced %d, ended %d)" % (s["bursts"], s["paced"], s["burst_n"]))
            phase = [(e - now - 7000) % PERIOD_MIN_US for e in r["hold_ends"]]
            check(len(phase) == 5 and all(p < PERIOD_MIN_US // 4 for p in phase),
                  "cuda-standin: each hold ended at a slot (us after it: %s)" % phase)
            check(max(r["returned_us"]) < PERIOD_MIN_US / 4,
                  "cuda-standin: the caller never waited (us: %s)"
                  % ["%.0f" % x for x in r["returned_us"]])
            check(r["stamps"] == 5, "cuda-standin: 5 end stamps on their own stream (%d)"
                  % r["stamps"])
    else:
        print("skip: cuda-standin (the stand-in CUDA runtime is built only with the interposer)")

    if failures:
        print("%d check(s) failed; files in %s" % (len(failures), workdir))
        return 1
    subprocess.call(["rm", "-rf", workdir])
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "--cuda-standin":
        sys.exit(cuda_standin(sys.argv[2], sys.argv[3]))
    sys.exit(main())
