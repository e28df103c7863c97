"""What the stacks checkers read from a trace: strings, frames, stacks, the stack of each
call, the API calls and the NVTX ranges, with the package's own reader."""
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "python"))
from warpscope.reader import TraceFile  # noqa: E402


class StackTrace:
    def __init__(self, path):
        self.strings, self.frames, self.stacks, self.api_stack = {}, {}, {}, {}
        self.calls = []  # (start, end, thread, correlation id, name)
        self.ranges = defaultdict(list)  # thread -> [(start, end, name)]
        with TraceFile(path) as t:
            for p in t:
                kind = p.WhichOneof("data")
                if kind == "interned_string":
                    self.strings[p.interned_string.id] = p.interned_string.value
                elif kind == "stack_frame":
                    self.frames[p.stack_frame.id] = p.stack_frame
                elif kind == "call_stack":
                    self.stacks[p.call_stack.id] = list(p.call_stack.frame_ids)
                elif kind == "api_stack":
                    self.api_stack[p.api_stack.correlation_id] = p.api_stack.stack_id
                elif kind == "api_call":
                    c = p.api_call
                    self.calls.append((c.start_ns, c.start_ns + c.duration_ns, c.thread_id,
                                       c.correlation_id, self.strings.get(c.name_id, "")))
                elif kind == "nvtx_range":
                    r = p.nvtx_range
                    self.ranges[r.thread_id].append(
                        (r.start_ns, r.start_ns + r.duration_ns, self.strings.get(r.name_id, "")))

    def frames_of(self, correlation_id):
        """The frames of a call's stack, innermost first; [] without one."""
        return [self.frames[f] for f in self.stacks.get(self.api_stack.get(correlation_id, 0), [])]

    def string(self, sid):
        return self.strings.get(sid, "")
