#!/usr/bin/env python3
"""A real data-parallel training job for the testbed and the live-loop test.

A small convolutional network learns synthetic 32x32 images (a fixed random
labelling) with torch.distributed's DistributedDataParallel over gloo, its
gradient all-reduce paced by harmonics.torch.pace(model) (nothing happens
outside a --comm-sched step). One rank per Slurm task (SLURM_PROCID,
SLURM_NTASKS), or torchrun's RANK/WORLD_SIZE; rank 0 listens on --rendezvous.

Every rank prints its iteration times on stderr ("iter N iter_ms=..."); with
--json rank 0 prints on stdout the job's results in harmonics-emujob's --json
form (the testbed reads both alike; tests/testbed/case.sh):
  ranks, model, compute_s (declared: --dry-run's), bytes (the gradient),
  iterations, warmup, step_time_s, over_step_time (steps of all ranks),
  iter_ms/comm_ms/wait_ms/compute_ms/ready_ms {mean,p50,p95,p99,max}, start_us,
  end_us, pace {prio, dscp, active, paced, late, skipped, unpaced, period_us,
  burst_us, slot_error_us, slot_misses, applied_epoch},
  per_iteration [{iter_ms, comm_ms, wait_ms, compute_ms, ready_ms, start_us,
  slot, epoch}]
Per iteration, over all ranks (one machine: one clock): ready = the last
rank's gradient ready, wait = until the last rank's hold ended, comm = from
then to the end of rank 0's backward (the all-reduce), ready_ms = the rest of
the iteration (forward, backward, optimizer step: what the simulator calls
compute). slot is null (the hook plans inside the runtime).

--step-time S stands in for a dedicated accelerator, which this machine lacks:
on a GPU cluster a rank's step takes the same time whatever other jobs do, on
a few shared CPU cores it varies by a quarter or more. The step's real
forward and backward run, then the last gradient's hook (the one DDP's
all-reduce waits for; learnt in the first iteration) sleeps until S after the
step began. The JSON says how many steps took longer than S by themselves
(over_step_time).

--dry-run: no network; builds the model, times forward + backward + step of a
few batches on this process alone, prints {"model", "compute_s", "bytes",
"params"} (the declared profile).

One thread per process (torch.set_num_threads(1)): the testbed's ranks share a
few cores. Exit 0, or 1 with a message on any failure (bounded by --timeout).
"""

import argparse
import datetime
import json
import os
import sys
import time

MODELS = {
    # name: (conv widths, hidden units, batch per rank). cnn: 221,930 parameters,
    # 0.89 MB of fp32 gradient: one DDP bucket (under the first bucket's 1 MiB
    # cap), so one burst per iteration, paced whole.
    "cnn": ((32, 64, 64), 160, 16),
    # 93,754 parameters (0.38 MB), less compute
    "cnn-s": ((16, 32, 48), 96, 16),
}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="cnn", help="one of: %s (default cnn)" % ", ".join(MODELS))
    ap.add_argument("--batch", type=int, default=0, help="images per rank and step (default: the model's, 16)")
    ap.add_argument("--iterations", type=int, default=20, help="measured iterations (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="iterations before them (default 2)")
    ap.add_argument("--rendezvous", metavar="ADDR:PORT", help="rank 0's address (required unless --dry-run)")
    ap.add_argument("--ifname", help="gloo's interface (GLOO_SOCKET_IFNAME), e.g. eth0")
    ap.add_argument("--timeout", type=float, default=60, help="seconds for the rendezvous and each collective (default 60)")
    ap.add_argument("--json", action="store_true", help="rank 0 prints the results as JSON on stdout")
    ap.add_argument("--no-pace", action="store_true", help="do not call harmonics.torch.pace")
    ap.add_argument("--stop-file", metavar="PATH",
                    help="end after the iteration in which PATH exists on any rank (--iterations "
                         "is then the most); all ranks stop at the same one")
    ap.add_argument("--dry-run", action="store_true", help="print the declared profile and exit")
    ap.add_argument("--declared-compute", type=float, default=0.0, metavar="S",
                    help="compute_s to write into the results (the declared profile's)")
    ap.add_argument("--step-time", type=float, default=0.0, metavar="S",
                    help="accelerator stand-in: each step's forward and backward take at least S "
                         "seconds (the last gradient waits until then, before the all-reduce); "
                         "0 (default): the CPU's own time")
    a = ap.parse_args(argv)
    if a.model not in MODELS:
        ap.error("--model %r: accepted %s" % (a.model, ", ".join(MODELS)))
    if a.batch == 0:
        a.batch = MODELS[a.model][2]
    for k, lo, hi in (("batch", 1, 4096), ("iterations", 1, 100000), ("warmup", 0, 1000)):
        if not lo <= getattr(a, k) <= hi:
            ap.error("--%s %d: accepted %d-%d" % (k, getattr(a, k), lo, hi))
    if not 0 <= a.step_time <= 60:
        ap.error("--step-time %g: accepted 0 (off) to 60 seconds" % a.step_time)
    if not 0 < a.timeout <= 3600:
        ap.error("--timeout %g: accepted (0, 3600] seconds" % a.timeout)
    if not a.dry_run:
        if not a.rendezvous or a.rendezvous.count(":") != 1 or not a.rendezvous.split(":")[1].isdigit():
            ap.error("--rendezvous %r: accepted ADDR:PORT" % a.rendezvous)
    return a


def build(torch, name):
    nn = torch.nn
    (c1, c2, c3), hidden, _ = MODELS[name]
    return nn.Sequential(
        nn.Conv2d(3, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16x16
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 8x8
        nn.Conv2d(c2, c3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 4x4
        nn.Flatten(), nn.Linear(c3 * 16, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def now_us():
    return time.time_ns() // 1000


def dist_of(v):
    s = sorted(v)
    n = len(s)

    def pct(q):
        return s[min(n - 1, int(q * n))]
    return {"mean": sum(s) / n, "p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99), "max": s[-1]}


def dry_run(torch, a):
    torch.manual_seed(0)
    net = build(torch, a.model)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(a.batch, 3, 32, 32)
    y = torch.randint(0, 10, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for i in range(6):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    params = sum(p.numel() for p in net.parameters())
    print(json.dumps({"model": a.model, "compute_s": round(sorted(times)[len(times) // 2], 6),
                      "bytes": params * 4, "params": params}))
    return 0


def train(torch, a):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "0")))
    world = int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", "1")))
    addr, port = a.rendezvous.split(":")
    if a.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
    timeout = datetime.timedelta(seconds=a.timeout)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (addr, port), rank=rank,
                            world_size=world, timeout=timeout)
    torch.manual_seed(1234 + rank)  # each rank its own shard of the synthetic data
    net = build(torch, a.model)
    if a.stop_file:
        # The stop flag rides in the gradient all-reduce: a one-element parameter
        # whose gradient is 1 on a rank that saw the file; after backward every
        # rank holds the same average, so all stop after the same iteration.
        net.stop_flag = torch.nn.Parameter(torch.zeros(1))
    model = DDP(net)  # parameters broadcast from rank 0
    paced = None
    if not a.no_pace:
        import harmonics.torch as ht
        model = ht.pace(model)
        paced = ht.pacer(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = [(torch.randn(a.batch, 3, 32, 32), torch.randint(0, 10, (a.batch,))) for _ in range(8)]

    # Instrumentation, not pacing: the time each gradient is computed (its last
    # one is the burst's ready time) and the hold inside the runtime. With
    # --step-time the last gradient (the same one every step: a fixed graph)
    # also waits for the step's end.
    last_grad = [0]
    step = {"start_us": 0, "seen": [], "last": None, "over": 0, "measuring": False}
    step_us = int(a.step_time * 1e6)

    def hook_of(idx):
        def grad_hook(g):
            if step["last"] is None:
                step["seen"].append(idx)
            elif idx == step["last"] and step_us:
                left_us = step["start_us"] + step_us - now_us()
                if left_us > 0:
                    time.sleep(left_us / 1e6)
                elif step["measuring"]:
                    step["over"] += 1
            last_grad[0] = now_us()
            return g
        return grad_hook
    for idx, p in enumerate(model.parameters()):
        p.register_hook(hook_of(idx))
    hold = [0]
    if paced is not None:
        begin = paced._begin

        def timed_begin():
            t = now_us()
            begin()
            hold[0] = now_us() - t
        paced._begin = timed_begin

    total = a.warmup + a.iterations
    rec = []  # per iteration: start, ready, hold, backward end, end, epoch
    for i in range(total):
        t0 = now_us()
        step["start_us"] = t0
        step["measuring"] = i >= a.warmup
        x, y = data[i % len(data)]
        opt.zero_grad(set_to_none=True)
        hold[0] = 0
        loss = loss_fn(model(x), y)
        if a.stop_file:
            seen = 1.0 if os.path.exists(a.stop_file) else 0.0
            (loss + (net.stop_flag * seen).sum()).backward()
        else:
            loss.backward()  # DDP returns once the all-reduce is done
        t_back = now_us()
        if step["last"] is None and step["seen"]:
            step["last"] = step["seen"][-1]
        opt.step()
        t_end = now_us()
        epoch = -1
        if paced is not None and paced.on:
            epoch = paced.rt.stats()["burst_epoch"]
        rec.append((t0, last_grad[0], hold[0], t_back, t_end, epoch))
        sys.stderr.write("iter %d iter_ms=%.2f loss=%.4f\n" % (i, (t_end - t0) / 1e3, loss.item()))
        if a.stop_file and net.stop_flag.grad is not None and net.stop_flag.grad.item() > 0 and i >= a.warmup:
            break
    sys.stderr.flush()
    everyone = [None] * world
    dist.all_gather_object(everyone, (rec, step["over"]))
    if rank == 0:
        print_results(a, world, [e[0] for e in everyone], sum(e[1] for e in everyone), paced)
    dist.barrier()
    dist.destroy_process_group()
    return 0


def print_results(a, world, everyone, over, paced):
    mine = everyone[0]
    per = []
    for i in range(a.warmup, len(mine)):
        t0, _, _, t_back, t_end, epoch = mine[i]
        ready = max(r[i][1] for r in everyone)
        released = max(r[i][1] + r[i][2] for r in everyone)
        comm = max(0, t_back - released)
        wait = max(0, released - ready)
        it = t_end - t0
        per.append({"iter_ms": it / 1e3, "comm_ms": comm / 1e3, "wait_ms": wait / 1e3,
                    "compute_ms": (mine[i][1] - t0) / 1e3, "ready_ms": (it - comm - wait) / 1e3,
                    "start_us": t0, "slot": None, "epoch": epoch})
    pace = {"prio": None, "dscp": None, "active": False}
    if paced is not None:
        s = paced.rt.stats()
        prio = paced.rt.prio()
        pace = {"prio": prio if prio >= 0 else None, "dscp": None, "active": paced.rt.active()}
        for k in ("paced", "late", "skipped", "unpaced", "period_us", "burst_us",
                  "slot_error_us", "slot_misses", "applied_epoch"):
            pace[k] = s[k]
        pace["hook"] = {"iterations": paced.iterations, "buckets": paced.buckets,
                        "holds": paced.holds, "on": paced.on}
    import torch
    out = {"ranks": world, "model": "torch-" + a.model, "compute_s": a.declared_compute,
           "bytes": sum(p.numel() for p in build(torch, a.model).parameters()) * 4,
           "iterations": len(per), "warmup": a.warmup, "step_time_s": a.step_time,
           "over_step_time": over}
    for k in ("iter_ms", "comm_ms", "wait_ms", "compute_ms", "ready_ms"):
        out[k] = dist_of([p[k] for p in per])
    out.update(start_us=mine[0][0], end_us=mine[-1][4], pace=pace, per_iteration=per)
    sys.stderr.write("torch_train: mean iteration %.2f ms over %d iterations (after %d warm-up), "
                     "comm %.2f ms, wait %.2f ms\n" % (out["iter_ms"]["mean"], len(per), a.warmup,
                                                      out["comm_ms"]["mean"], out["wait_ms"]["mean"]))
    print(json.dumps(out))
    sys.stdout.flush()


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        sys.stderr.write("torch_train: no PyTorch in %s (%s); Debian: python3-torch\n" % (sys.executable, e))
        return 1
    torch.set_num_threads(1)
    try:
        return dry_run(torch, a) if a.dry_run else train(torch, a)
    except Exception as e:  # a rendezvous or collective that failed or timed out
        sys.stderr.write("torch_train: %s: %s\n" % (type(e).__name__, e))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
