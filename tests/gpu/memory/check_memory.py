"""Checks gpu_memory.sh's traces against the programs' references, reading them with the
warpscope package's reader and protobuf schema (not its memory analysis):

  ops        every cudaMalloc of ws_memory_ops has its ALLOCATE (device memory, right bytes, at
             the address the program got) and its RELEASE, and a stack (ApiStackEvent of its
             correlation id); the pool's blocks carry their pool and stream, and the pool has
             its POOL_CREATE, POOL_TRIM and POOL_DESTROY; cudaMallocAsync, cudaHostAlloc (pinned)
             and cudaMallocManaged (managed) blocks; the VMM block's MAP and UNMAP; the failed
             request: ALLOCATE_FAILED with the bytes asked, result 2, a thread and a stack, and
             the `warpscope:` notice
  ops_oom    a dump ends with trigger ERROR and holds the failed request; every block live at
             the failure is in it (ALLOCATE at its address, its bytes, with its stack), though
             the ring let their records go; the block freed before is not live in it
  leak_*     at the end of each `step` range, device memory in use (ALLOCATE - RELEASE + MAP -
             UNMAP) is at least torch.cuda.memory_reserved, and what lies beyond it stays
             within 64 MiB of the first step's; the trace's peak >= max_memory_reserved; it
             grows by the leak (less 128 MiB the allocator may already hold); with expandable
             segments, MAP records carry the growth
  torch_oom  a dump with trigger ERROR, an ALLOCATE_FAILED of the bytes the error names with
             a Python stack through torch_oom.py, and at least as many live blocks of >= 1 GiB
             as the program held

  python3 tests/gpu/memory/check_memory.py DIR     (DIR: gpu_memory.sh's $OUT)
Prints PASS/FAIL lines; exit status: the number of failures (max 100)."""
import glob
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "python"))
import warpscope  # noqa: E402
from warpscope import schema  # noqa: E402
from warpscope.errors import TraceError  # noqa: E402

OP = {getattr(schema, n): n[len("MEMORY_OPERATION_"):] for n in dir(schema)
      if n.startswith("MEMORY_OPERATION_")}
KIND = {getattr(schema, n): n[len("MEMORY_KIND_"):] for n in dir(schema)
        if n.startswith("MEMORY_KIND_")}
TRIGGER = {getattr(schema, n): n[len("CAPTURE_TRIGGER_"):] for n in dir(schema)
           if n.startswith("CAPTURE_TRIGGER_")}
OOM_RESULT = 2


class MemTrace:
    """The memory events, stacks, NVTX ranges, windows and notices of one trace."""

    def __init__(self, path):
        self.path = path
        self.events = []                 # MemoryEvent messages, in file order
        self.stacks = {}                 # correlation id -> CallStack id
        self.call_stacks = {}            # CallStack id -> [frame id]
        self.frames = {}                 # frame id -> (file, function, line)
        self.strings = {}
        self.steps = []                  # (start, end) of NVTX ranges `step`
        self.end_trigger = None
        self.notices = []
        t = warpscope.open(path)
        raw_frames = {}
        for kind, m in t.scan():
            if kind == "memory":
                self.events.append(m)
            elif kind == "api_stack":
                self.stacks[m.correlation_id] = m.stack_id
            elif kind == "call_stack":
                self.call_stacks[m.id] = list(m.frame_ids)
            elif kind == "stack_frame":
                raw_frames[m.id] = (m.file_id, m.function_id, m.line)
            elif kind == "interned_string":
                self.strings[m.id] = m.value
            elif kind == "nvtx_range":
                self.steps.append((m.start_ns, m.start_ns + m.duration_ns, m.name_id))
            elif kind == "capture_window" and not m.begin:
                self.end_trigger = TRIGGER.get(m.trigger, str(m.trigger))
            elif kind == "notice":
                self.notices.append(m.message)
        t.close()
        s = self.strings.get
        self.frames = {i: (s(f, ""), s(fn, ""), line) for i, (f, fn, line) in raw_frames.items()}
        self.steps = sorted((a, b) for a, b, n in self.steps if s(n, "") == "step")

    def of(self, op):
        return [e for e in self.events if OP.get(e.operation) == op]

    def stack_files(self, correlation_id):
        """The files of the stack of a call ([] without one)."""
        frames = self.call_stacks.get(self.stacks.get(correlation_id), [])
        return [self.frames.get(f, ("", "", 0))[0] for f in frames]

    def in_use_at(self, t):
        """Device memory in use at t: allocations and maps minus releases and unmaps."""
        live = {}
        for e in sorted(self.events, key=lambda e: e.timestamp_ns):
            if e.timestamp_ns > t:
                break
            if KIND.get(e.memory_kind) not in ("DEVICE", "UNKNOWN"):
                continue
            op = OP.get(e.operation)
            if op in ("ALLOCATE", "MAP"):
                live[e.address] = e.bytes
            elif op in ("RELEASE", "UNMAP"):
                live.pop(e.address, None)
        return sum(live.values())


class Checker:
    def __init__(self):
        self.failures = 0

    def expect(self, name, ok, detail=""):
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
        if not ok:
            self.failures += 1
        return ok


def load_json(path):
    with open(path) as f:
        return json.load(f)


def check_ops(c, folder):
    ref = load_json(os.path.join(folder, "ops.json"))
    t = MemTrace(os.path.join(folder, "ops.wst"))
    # A program's addresses are reused (the 3 MiB block's address later holds the pinned block
    # and a VMM mapping), so each block is matched by address and size, in time order.
    allocs, releases = {}, {}
    for e in sorted(t.of("ALLOCATE"), key=lambda e: e.timestamp_ns):
        allocs.setdefault((e.address, e.bytes), e)
    for e in sorted(t.of("RELEASE"), key=lambda e: e.timestamp_ns):
        releases.setdefault((e.address, e.bytes), []).append(e)
    want_kind = {"cudaMalloc": "DEVICE", "cudaMallocFromPoolAsync": "DEVICE",
                 "cudaMallocAsync": "DEVICE", "cudaHostAlloc": "PINNED",
                 "cudaMallocManaged": "MANAGED"}
    for b in ref["blocks"]:
        what, addr, size = b["what"], b["address"], b["bytes"]
        name = f"ops {what} {size >> 20} MiB"
        if what == "cuMemMap":
            maps = [e for e in t.of("MAP") if e.address == addr and e.bytes == size]
            unmaps = [e for e in t.of("UNMAP") if e.address == addr and e.bytes == size]
            c.expect(name + " MAP and UNMAP", len(maps) == 1 and len(unmaps) == 1,
                     f"{len(maps)} maps, {len(unmaps)} unmaps at {addr:#x}")
            if maps:
                c.expect(name + " stack", maps[0].correlation_id in t.stacks)
            continue
        a = allocs.get((addr, size))
        if not c.expect(name + " ALLOCATE", a is not None and a.bytes == size,
                        f"at {addr:#x}: {a.bytes if a else 'none'} bytes"):
            continue
        c.expect(name + " kind", KIND.get(a.memory_kind) == want_kind[what],
                 KIND.get(a.memory_kind, "?"))
        r = next((x for x in releases.get((addr, size), []) + releases.get((addr, 0), [])
                  if x.timestamp_ns >= a.timestamp_ns), None)
        c.expect(name + " RELEASE", r is not None, f"{r.bytes if r else 'none'}")
        c.expect(name + " stack", a.correlation_id in t.stacks,
                 f"correlation id {a.correlation_id}")
        if what == "cudaMallocFromPoolAsync":
            c.expect(name + " pool and stream", a.pool_address != 0 and a.stream_id != 0,
                     f"pool {a.pool_address:#x} stream {a.stream_id} reserved "
                     f"{a.pool_reserved_bytes} used {a.pool_used_bytes}")
    for op in ("POOL_CREATE", "POOL_TRIM", "POOL_DESTROY"):
        c.expect(f"ops {op}", len(t.of(op)) >= 1, f"{len(t.of(op))} records")
    failed = t.of("ALLOCATE_FAILED")
    want = ref["failed"]["bytes"]
    f = [e for e in failed if e.bytes == want]
    if c.expect("ops failed request", len(f) == 1 and f[0].result == OOM_RESULT,
                f"{len(failed)} ALLOCATE_FAILED, want one of {want} bytes (program's result "
                f"{ref['failed']['result']})"):
        c.expect("ops failed request thread and stack",
                 f[0].thread_id != 0 and f[0].correlation_id in t.stacks,
                 f"thread {f[0].thread_id}, correlation id {f[0].correlation_id}")
    c.expect("ops out-of-memory notice", any("allocation failed" in n for n in t.notices))


def dumps_of(folder, name):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, f"{name}_*.wst"))):
        out.append(MemTrace(path))
    return out


def oom_dump(c, folder, name):
    dumps = dumps_of(folder, name)
    oom = [d for d in dumps if d.of("ALLOCATE_FAILED")]
    c.expect(f"{name} dumps", bool(oom),
             f"{len(dumps)} dumps, ends: {[d.end_trigger for d in dumps]}")
    if not oom:
        return None
    d = oom[0]
    c.expect(f"{name} dump trigger", d.end_trigger == "ERROR", str(d.end_trigger))
    return d


def check_ops_oom(c, folder):
    ref = load_json(os.path.join(folder, "ops_oom.json"))
    d = oom_dump(c, folder, "ops_oom")
    if d is None:
        return
    failed = [e for e in d.of("ALLOCATE_FAILED") if e.bytes == ref["failed"]["bytes"]]
    c.expect("ops_oom failed request", bool(failed) and failed[0].correlation_id in d.stacks)
    live = {}
    for e in sorted(d.events, key=lambda e: e.timestamp_ns):
        if OP.get(e.operation) == "ALLOCATE":
            live[e.address] = e
        elif OP.get(e.operation) == "RELEASE":
            live.pop(e.address, None)
    for b in ref["blocks"]:
        e = live.get(b["address"])
        c.expect(f"ops_oom live {b['bytes'] >> 20} MiB at {b['address']:#x}",
                 e is not None and e.bytes == b["bytes"] and e.correlation_id in d.stacks,
                 "missing" if e is None else f"{e.bytes} bytes, stack "
                 f"{e.correlation_id in d.stacks}")
    extra = [e for a, e in live.items() if a not in {b["address"] for b in ref["blocks"]}
             and e.bytes == 32 << 20]
    c.expect("ops_oom the freed block is not live", not extra)


def check_leak(c, folder, name, expandable):
    path = os.path.join(folder, f"{name}.wst")
    ref = load_json(os.path.join(folder, f"{name}.json"))
    t = MemTrace(path)
    rows = ref["steps"]
    if not c.expect(f"{name} steps", len(t.steps) == len(rows),
                    f"{len(t.steps)} step ranges, {len(rows)} reference rows"):
        return
    beyond = []
    for (start, end), row in zip(t.steps, rows):
        used = t.in_use_at(end)
        beyond.append(used - row["reserved"])
    print(f"  {name}: device bytes beyond torch's reserved, per step (MiB): "
          f"{[round(b / 2**20, 1) for b in beyond]}")
    c.expect(f"{name} in use >= reserved at every step", min(beyond) >= 0,
             f"min {min(beyond) / 2**20:.1f} MiB")
    c.expect(f"{name} the rest stays put", abs(beyond[-1] - beyond[0]) <= 64 << 20,
             f"{(beyond[-1] - beyond[0]) / 2**20:.1f} MiB")
    peak = max(t.in_use_at(end) for _, end in t.steps)
    c.expect(f"{name} peak >= max_memory_reserved", peak >= rows[-1]["max_reserved"],
             f"{peak >> 20} vs {rows[-1]['max_reserved'] >> 20} MiB")
    growth = t.in_use_at(t.steps[-1][1]) - t.in_use_at(t.steps[1][1])
    want = ref["leak_bytes_per_step"] * (len(rows) - 2)
    # The caching allocator may serve the first leaked tensors from memory it already holds.
    c.expect(f"{name} growth covers the leak", growth >= want - (128 << 20),
             f"{growth >> 20} MiB over steps 1..{len(rows) - 1}, leak {want >> 20} MiB")
    if expandable:
        c.expect(f"{name} VMM maps", len(t.of("MAP")) > 0, f"{len(t.of('MAP'))} MAP records")


def check_torch_oom(c, folder):
    ref = load_json(os.path.join(folder, "torch_oom.json"))
    d = oom_dump(c, folder, "torch_oom")
    if d is None:
        return
    asked = ref["asked_bytes"]
    failed = d.of("ALLOCATE_FAILED")
    match = [e for e in failed if asked is None or e.bytes >= asked]
    c.expect("torch_oom failed request", bool(match),
             f"{[e.bytes for e in failed]} vs asked {asked}")
    if match:
        files = d.stack_files(match[0].correlation_id)
        c.expect("torch_oom failed request's stack", any(f.endswith("torch_oom.py") for f in files),
                 f"{files[:6]}")
    live = {}
    for e in sorted(d.events, key=lambda e: e.timestamp_ns):
        if OP.get(e.operation) in ("ALLOCATE", "MAP"):
            live[e.address] = e
        elif OP.get(e.operation) in ("RELEASE", "UNMAP"):
            live.pop(e.address, None)
    big = sum(e.bytes for e in live.values() if KIND.get(e.memory_kind) == "DEVICE")
    c.expect("torch_oom live set", big >= ref["held_blocks"] * ref["block_bytes"],
             f"{big >> 20} MiB live in the dump, the program held {ref['held_blocks']} GiB")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    c = Checker()
    for name, fn in (("ops", lambda: check_ops(c, folder)),
                     ("ops_oom", lambda: check_ops_oom(c, folder)),
                     ("leak_plain", lambda: check_leak(c, folder, "leak_plain", False)),
                     ("leak_expandable", lambda: check_leak(c, folder, "leak_expandable", True)),
                     ("torch_oom", lambda: check_torch_oom(c, folder))):
        try:
            fn()
        except (OSError, ValueError, KeyError, TraceError) as e:
            c.expect(f"{name} readable", False, f"{type(e).__name__}: {e}")
    print(f"{c.failures} failures")
    sys.exit(min(c.failures, 100))


if __name__ == "__main__":
    main()
