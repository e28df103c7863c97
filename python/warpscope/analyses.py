"""The CLI's analyses as Python functions: ``warpscope.NAME(traces, **options)`` returns the
tables of ``warpscope NAME --format json`` as DataFrames, ``scalars`` (one row) first, then
one frame per table. Every function takes its traces alike (``inputs.trace_paths``: a path, a
``TraceFile``, several, a folder or a glob pattern), names its options as the CLI's flags
(dashes as underscores) and raises ``warpscope.Error`` for bad input. They run the CLI's own
C++ code through the extension (docs/python.md, *Analyses*)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

from . import native
from .errors import Error
from .inputs import one_trace_path, trace_arguments, trace_paths

Frames = Dict[str, Any]

# The part of the traces every analysis reads, as the CLI's --from/--to/--step/--window
# (docs/cli.md, *Slices*): ``from_`` (``from`` is Python's), ``to``, ``step``, ``window``.
SLICE_OPTIONS = ("from_", "to", "step", "window")


def _slice(options: Dict[str, Any]) -> Dict[str, Any]:
    """The slice options given; Error for any other keyword."""
    for key in options:
        if key not in SLICE_OPTIONS:
            raise Error(f"warpscope: no option {key!r}; the slice options are "
                        f"{', '.join(SLICE_OPTIONS)}")
    return {k: v for k, v in options.items() if v is not None}


def summary(traces: Any, report: str = "", reports: Optional[str] = None,
            **slice_options: Any) -> Frames:
    """``warpscope summary``: ``kernels``, ``api``, ``memory``, ``nvtx``, ``idle``, ... (`report`
    picks some, as ``--report``), over one trace or several (then a combined ``file`` "*"
    view too). `reports` is the deprecated name of `report`."""
    if reports is not None:
        warnings.warn("warpscope: summary(reports=...) is now summary(report=...), as the "
                      "CLI's --report; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        report = report or reports
    if _slice(slice_options):
        return run("summary", traces, report=report or None, **slice_options)
    return native.analysis("summary_tables", trace_paths(traces), report)


def occupancy(traces: Any, kernel: str = "", **slice_options: Any) -> Frames:
    """``warpscope occupancy``: ``occupancy``, one row per kernel name and launch
    configuration; `kernel` is an RE2 pattern searched in the name. One trace."""
    if _slice(slice_options):
        return run("occupancy", traces, kernel=kernel or None, **slice_options)
    return native.analysis("occupancy_tables", [one_trace_path(traces, "occupancy")], kernel)


def tail(traces: Any, kernel: str = "", instances: bool = False,
         **slice_options: Any) -> Frames:
    """``warpscope tail``: ``kernels`` (one row per kernel name) and with `instances`
    ``instances`` (one per launch). One trace."""
    if _slice(slice_options):
        frames = run("tail", traces, kernel=kernel or None, instances=instances,
                     **slice_options)
    else:
        frames = native.analysis("tail_tables", [one_trace_path(traces, "tail")], kernel,
                                 bool(instances))
    if not instances:
        frames.pop("instances", None)
    return frames


def advise(traces: Any, device: Optional[int] = None, top: int = 0,
           literal_ranges: bool = False, step_range: str = "", **slice_options: Any) -> Frames:
    """``warpscope advise``: ``findings`` (ranked by the time a fix would save: order, rule,
    cost, where, evidence, fix, one_time), ``scalars`` (the head line and its figures, the
    steps found and the warm-up steps; also under its old key ``summary`` for one release),
    ``devices`` (busy time per device) and ``notes`` (rules skipped and why). `device` keeps
    one device; `top` keeps the costliest findings (0: all); `literal_ranges` keeps range
    names as written (by default ``step_12`` is ``step_<N>``); `step_range` names the NVTX
    range that marks steps. One trace."""
    if _slice(slice_options):
        frames = run("advise", traces, device=device, top=top, literal_ranges=literal_ranges,
                     step_range=step_range or None, **slice_options)
    else:
        frames = native.analysis("advise_tables", [one_trace_path(traces, "advise")],
                                 -1 if device is None else int(device), int(top),
                                 bool(literal_ranges), str(step_range))
    frames["summary"] = frames["scalars"]  # the old key, deprecated (CHANGELOG.md)
    return frames


def stalls(traces: Any, kernel: Optional[str] = None, by: str = "kernel",
           **slice_options: Any) -> Frames:
    """``warpscope stalls``: why each kernel's warps waited, from PC samples (definitions in
    docs/stalls.md), summed per kernel over the traces. `kernel` keeps the kernels whose name
    matches (RE2). ``kernels`` and ``reasons``, or with ``by="pc"`` ``kernels`` and ``pcs``;
    each share with its 95% interval (``low_pct``, ``high_pct``), each kernel with its
    ``sampling_instants`` and ``too_few``. ``by="line"``: ``kernels``, ``reasons`` and
    ``lines`` (each source line's samples and top reasons), as ``warpscope stalls --by
    line``."""
    if by not in ("kernel", "pc", "line"):
        raise Error(f"warpscope: by must be 'kernel', 'pc' or 'line', not {by!r}")
    if by == "line" or _slice(slice_options):
        return run("stalls", traces, kernel=kernel or None, by=by, top=0, **slice_options)
    return native.analysis("stall_tables", trace_paths(traces), kernel or "", by == "pc")


def job(traces: Any, step: str = "", threads: int = 0) -> Frames:
    """``warpscope job``: every rank's trace of a data-parallel job read together
    (docs/distributed.md). ``scalars`` (the straggler, its evidence and cause, time lost
    waiting), ``ranks`` (medians over the steady steps, ``median_*``; totals, ``total_*``),
    ``collectives``, ``steps``, ``instances`` (each collective matched across the ranks) and
    ``problems``. `step` names the NVTX range that marks a step; `threads` how many traces
    are read at once."""
    return native.job(trace_paths(traces), step, threads)


def _flag_text(value: Any) -> str:
    """An option's value as the CLI's flag takes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run(name: str, traces: Any, **options: Any) -> Frames:
    """Any analysis of the CLI's list by its command name (``warpscope help`` lists them),
    on `traces` as every function takes them, with `options` named as its flags (dashes as
    underscores, ``from_`` for --from; a switch is True). Returns its report's tables, as ``warpscope NAME --table
    TABLE`` gives them: ``scalars`` (one row) first. ``Error`` for an unknown analysis or
    option, a value the CLI refuses, or traces that do not fit it."""
    given = {k.rstrip("_").replace("_", "-"): _flag_text(v) for k, v in options.items()
             if v is not None and v is not False}
    return native.run_row(name, trace_arguments(traces), given)


def rows() -> list:
    """The CLI's list of analyses: each ``{"name", "summary", "options": [...]}``."""
    return native.rows()


def precision(traces: Any, kernel: str = "", device: Optional[int] = None, top: int = 20,
              short_names: bool = False) -> Frames:
    """``warpscope precision``: each kernel's math class (FP32 SIMT, TF32/BF16/FP16/FP8/INT8
    tensor core, FP64, no matrix multiply, unknown) with its GPU time (docs/cli.md,
    *precision*). Tables ``scalars``, ``classes`` and ``kernels``."""
    return run("precision", traces, kernel=kernel or None, device=device, top=top,
               short_names=short_names)


def memory(traces: Any, device: Optional[int] = None, top: int = 10) -> Frames:
    """``warpscope memory``: device memory over time (docs/memory.md): each device's peak and
    who held it, the peak of each NVTX phase and step, the largest blocks at the peak with
    their call sites, growth across the steady steps, refused requests. Tables ``scalars``,
    ``devices``, ``owners``, ``largest_blocks``, ``kinds``, ``steps``, ``phases``,
    ``growing_sites``, ``failures`` (the picture: the CLI's ``--svg FILE``)."""
    return run("memory", traces, device=device, top=top)


def sol(traces: Any, kernel: str = "", device: Optional[int] = None, top: int = 20,
        svg: Optional[str] = None, short_names: bool = False) -> Frames:
    """``warpscope sol``: each kernel's speed of light from PM samples recorded with
    ``--pm-metrics sol``: ``kernels`` (time share, verdict, closest unit with its interval,
    every unit's share of peak, coverage) and ``units`` (one row per kernel and unit: median or
    pooled figure, p90, interval). `svg` writes the roofline (docs/sol.md)."""
    return run("sol", traces, kernel=kernel or None, device=device, top=top, svg=svg,
               short_names=short_names)


def info(traces: Any) -> Frames:
    """``warpscope info``: the trace's header, devices, counters and sampling coverage, as
    the tables of ``warpscope info --table``."""
    return run("info", traces)


def diff(base: Any, new: Any, **options: Any) -> Frames:
    """``warpscope diff BASE NEW``: what changed between two traces (docs/cli.md, *diff*);
    `options` as its flags."""
    return run("diff", trace_arguments(base) + trace_arguments(new), **options)
