"""What the recorder checkers (check_attribution.py, check_windows.py) read from a trace, in
one pass with the package's own reader: kernels, API calls by correlation id, the calls that
carry a stack, NVTX ranges, capture-window edges, threads and notices; and the manifest and
request lines that tests/gpu/recorder/gpu_recorder.sh writes beside the traces."""
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "python"))
import warpscope  # noqa: E402
from warpscope import schema  # noqa: E402
from warpscope.errors import TraceError  # noqa: E402,F401  (the checkers catch it)

TRIGGERS = {getattr(schema, n): n[len("CAPTURE_TRIGGER_"):].lower()
            for n in dir(schema) if n.startswith("CAPTURE_TRIGGER_")}
DOMAINS = {schema.API_DOMAIN_RUNTIME: "runtime", schema.API_DOMAIN_DRIVER: "driver"}


class Kernel:
    __slots__ = ("start", "end", "correlation_id", "name", "graph_id")

    def __init__(self, start, end, correlation_id, name, graph_id):
        self.start, self.end = start, end
        self.correlation_id, self.name, self.graph_id = correlation_id, name, graph_id


class Call:
    __slots__ = ("start", "end", "thread", "name", "domain")

    def __init__(self, start, end, thread, name, domain):
        self.start, self.end, self.thread, self.name, self.domain = start, end, thread, name, domain


class Range:
    __slots__ = ("start", "end", "thread", "name", "domain", "depth")

    def __init__(self, start, end, thread, name, domain, depth):
        self.start, self.end, self.thread = start, end, thread
        self.name, self.domain, self.depth = name, domain, depth

    def holds(self, t):
        return self.start <= t <= self.end


class RecorderTrace:
    """One pass over a .wst file. Times are ns since the header's time base."""

    def __init__(self, path):
        self.path = path
        self.kernels = []
        self.calls = defaultdict(list)  # correlation id -> [Call]
        self.stacked = set()            # correlation ids with an ApiStackEvent
        self.ranges = []                # NVTX ranges (push/pop and start/end)
        self.windows = {}               # window id -> {"begin": (ns, trigger), "end": ...}
        self.notices = []               # (ns, source, message)
        self.threads = {}               # ThreadInfo.id -> (os_tid, name)
        self.first_call_ns = None
        t = warpscope.open(path)
        self.unix_base_ns = t.header.unix_time_base_ns
        self.command_line = list(t.header.command_line)
        strings = {}
        s = strings.get
        for kind, m in t.scan():
            if kind == "interned_string":
                strings[m.id] = m.value
            elif kind == "kernel":
                self.kernels.append(Kernel(m.start_ns, m.start_ns + m.duration_ns,
                                           m.correlation_id, s(m.name_id, "?"), m.graph_id))
            elif kind == "api_call":
                self.calls[m.correlation_id].append(
                    Call(m.start_ns, m.start_ns + m.duration_ns, m.thread_id, s(m.name_id, "?"),
                         DOMAINS.get(m.domain, "?")))
            elif kind == "api_stack":
                self.stacked.add(m.correlation_id)
            elif kind == "nvtx_range":
                self.ranges.append(Range(m.start_ns, m.start_ns + m.duration_ns, m.thread_id,
                                         s(m.name_id, ""), s(m.domain_id, ""), m.depth))
            elif kind == "capture_window":
                w = self.windows.setdefault(m.window_id, {})
                w["begin" if m.begin else "end"] = (m.timestamp_ns,
                                                    TRIGGERS.get(m.trigger, str(m.trigger)))
            elif kind == "notice":
                self.notices.append((m.timestamp_ns, m.source, m.message))
            elif kind == "thread":
                self.threads[m.id] = (m.os_tid, m.name)
        self.complete = t.complete
        self.issues = dict(t.issues)
        t.close()

    def launch_call(self, kernel):
        """The call that launched a kernel: of the calls with its correlation id, the one that
        began first (a runtime call before the driver call inside it); None without one."""
        calls = self.calls.get(kernel.correlation_id)
        return min(calls, key=lambda c: c.start) if calls else None

    def launch_time(self, kernel):
        """When a kernel was launched: its call's start, else (no call) its own start."""
        call = self.launch_call(kernel)
        return call.start if call else kernel.start

    def thread_label(self, thread_id):
        tid, name = self.threads.get(thread_id, (0, ""))
        return f"{name or 'thread'}/{tid}" if tid else f"thread#{thread_id}"

    def to_unix(self, ns):
        return self.unix_base_ns + ns


def read_manifest(folder):
    """The rows of FOLDER/manifest.jsonl (one JSON object a line), or []."""
    path = os.path.join(folder, "manifest.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def manifest_traces(folder, failures):
    """(row, trace path, path of a row's file by key) for each trace of FOLDER's manifest that
    exists; a missing manifest or trace is printed as a FAIL line and added to `failures`."""
    rows = read_manifest(folder)
    if not rows:
        failures.append(f"{folder}: no manifest.jsonl")
        print(f"FAIL {folder}: no manifest.jsonl (is it gpu_recorder.sh's folder?)")
    for row in rows:
        trace = os.path.join(folder, row["trace"])
        if not os.path.exists(trace):
            failures.append(f"{row['trace']}: missing")
            print(f"FAIL {row['trace']}: missing (see {row.get('log')})")
            continue
        yield row, trace, lambda k, row=row: os.path.join(folder, row[k]) if row.get(k) else None


def readable(check, trace, failures, *args):
    """check(trace, *args), with a file that is no trace as one failure in `failures`."""
    try:
        check(trace, *args)
    except TraceError as e:
        print(f"FAIL {trace}: {e}")
        failures.append(f"{os.path.basename(trace)}: unreadable")
    print()


def json_lines(path, key):
    """The JSON objects of a program's log (or a request file) that have `key`."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{") and f'"{key}"' in line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def table(headers, rows):
    """Rows as aligned text columns (numbers right-aligned)."""
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] in (None, "-") for r in rows)
               for i in range(len(headers))]
    lines = []
    for r in cells:
        lines.append("  ".join(c.rjust(w) if n else c.ljust(w)
                               for c, w, n in zip(r, widths, numeric)).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
