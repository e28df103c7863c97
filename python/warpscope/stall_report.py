"""Warp stall reasons per kernel from PC samples, as DataFrames: the figures of
``warpscope stalls`` (``analyzers/analyses/stall_report.cc``; definitions in docs/stalls.md).

CUPTI names every stall reason twice, ``X`` and ``X_not_issued``. The second is the part of
``X``'s samples in which the scheduler issued no instruction, not more samples: it is summed
into ``not_issued`` only, and the warp-state shares count ``X`` alone (adding both would count
those samples twice). Kernels are summed by demangled name over all launches and all traces.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from .reader import PathLike, TraceFile

# Dropped from CUPTI's names, first match only, as Nsight Compute shows the states.
_PREFIXES = ("smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_warps_issue_", "smsp__pcsamp_")
_NOT_ISSUED = "_not_issued"
KERNEL_COLUMNS = ["kernel", "samples", "pct", "selected", "not_issued", "cycles_per_issue"]
REASON_COLUMNS = ["kernel", "reason", "samples", "pct"]
PC_COLUMNS = ["kernel", "cubin_crc", "pc_offset", "pc_samples", "kernel_pct", "reason",
              "samples", "pct"]
TraceOrPath = Union[TraceFile, PathLike]


def warp_state(cupti_name: str) -> Tuple[str, bool]:
    """A CUPTI stall reason name as Nsight Compute names the warp state, and whether it is
    the ``_not_issued`` variant:
    ``"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"`` ->
    ``("long_scoreboard", True)``."""
    for prefix in _PREFIXES:
        if cupti_name.startswith(prefix):
            cupti_name = cupti_name[len(prefix):]
            break
    not_issued = cupti_name.endswith(_NOT_ISSUED)
    if not_issued:
        cupti_name = cupti_name[:-len(_NOT_ISSUED)]
    # CUPTI says "no_instructions" where Nsight Compute shows "no_instruction".
    return ("no_instruction" if cupti_name == "no_instructions" else cupti_name), not_issued


def _state_rows(trace: TraceFile, pc: pd.DataFrame) -> pd.DataFrame:
    """The trace's PC samples with each stall reason read as (state, not_issued); an index
    the device's ``PcStallReasons`` does not name is the state ``reason_<index>``."""
    keys = pc[["device_id", "stall_reason_index", "stall_reason"]].drop_duplicates()
    states, not_issued = [], []
    for device, index, reason in keys.itertuples(index=False):
        if index in trace.pc_stall_reasons.get(device, {}):
            state, variant = warp_state(reason)
        else:
            state, variant = f"reason_{index}", False
        states.append(state)
        not_issued.append(variant)
    keys = keys.assign(state=pd.Series(states, index=keys.index, dtype=str),
                       not_issued=np.array(not_issued, dtype=bool))
    rows = pc.merge(keys, on=["device_id", "stall_reason_index", "stall_reason"], how="left")
    return rows[["function_name", "cubin_crc", "pc_offset", "state", "not_issued", "samples"]]


def _as_traces(traces: Union[TraceOrPath, Iterable[TraceOrPath]]) -> List[TraceOrPath]:
    if isinstance(traces, (TraceFile, str, os.PathLike)):
        return [traces]
    return list(traces)


def _empty(columns: List[str]) -> pd.DataFrame:
    dtypes = {"kernel": str, "reason": str, "cubin_crc": np.uint64, "pct": np.float64,
              "kernel_pct": np.float64, "cycles_per_issue": np.float64}
    return pd.DataFrame({c: pd.Series([], dtype=dtypes.get(c, np.int64)) for c in columns})


def _percent(part: pd.Series, whole: pd.Series) -> pd.Series:
    """100 * part / whole, 0 where whole is 0 (as the CLI gives it)."""
    whole = whole.to_numpy(dtype=np.float64)
    safe = np.where(whole > 0, whole, 1.0)
    return pd.Series(np.where(whole > 0, part.to_numpy(dtype=np.float64) / safe * 100.0, 0.0),
                     index=part.index)


def _read_rows(traces: Union[TraceOrPath, Iterable[TraceOrPath]]
               ) -> Tuple[List[pd.DataFrame], Dict[str, str]]:
    """The state rows of every trace, and the demangled name of each mangled kernel name."""
    opened: List[TraceFile] = []
    parts: List[pd.DataFrame] = []
    demangled: Dict[str, str] = {}
    try:
        for item in _as_traces(traces):
            if isinstance(item, TraceFile):
                trace = item
            else:
                trace = TraceFile(item)
                opened.append(trace)
            frames = trace.to_dataframes()
            parts.append(_state_rows(trace, frames["pc_samples"]))
            # The package has no demangler: a kernel event names its function both ways, as
            # the collector demangled it when recording.
            for mangled, name in zip(frames["kernels"]["mangled_name"], frames["kernels"]["name"]):
                if mangled and name:
                    demangled.setdefault(mangled, name)
    finally:
        for trace in opened:
            trace.close()
    return parts, demangled


def _kernel_table(rows: pd.DataFrame, states: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel with samples, most sampled first (KERNEL_COLUMNS)."""
    by_kernel = pd.DataFrame({
        "samples": states.groupby("kernel")["samples"].sum(),
        "selected": states[states["state"] == "selected"].groupby("kernel")["samples"].sum(),
        "not_issued": rows[rows["not_issued"]].groupby("kernel")["samples"].sum(),
    }).fillna(0).astype(np.int64)
    by_kernel = by_kernel[(by_kernel["samples"] > 0) | (by_kernel["not_issued"] > 0)]
    by_kernel.index.name = "kernel"
    by_kernel = by_kernel.reset_index()
    if by_kernel.empty:
        return _empty(KERNEL_COLUMNS)
    by_kernel["kernel"] = by_kernel["kernel"].astype(str)
    total = pd.Series(np.full(len(by_kernel), by_kernel["samples"].sum()), index=by_kernel.index)
    by_kernel["pct"] = _percent(by_kernel["samples"], total)
    selected = by_kernel["selected"].to_numpy(dtype=np.float64)
    by_kernel["cycles_per_issue"] = np.where(
        selected > 0, by_kernel["samples"] / np.where(selected > 0, selected, 1.0), np.nan)
    by_kernel = by_kernel.sort_values(["samples", "kernel"], ascending=[False, True])
    return by_kernel[KERNEL_COLUMNS].reset_index(drop=True)


def _reason_table(states: pd.DataFrame, rank: pd.Series,
                  kernel_samples: pd.Series) -> pd.DataFrame:
    """Samples per kernel and warp state, kernels in `rank` order (REASON_COLUMNS)."""
    reasons = states.groupby(["kernel", "state"])["samples"].sum().reset_index()
    reasons["pct"] = _percent(reasons["samples"],
                              reasons["kernel"].map(kernel_samples))
    reasons["rank"] = reasons["kernel"].map(rank)
    reasons = reasons.sort_values(["rank", "samples", "state"],
                                  ascending=[True, False, True])
    reasons = reasons.rename(columns={"state": "reason"})
    return reasons[REASON_COLUMNS].reset_index(drop=True)


def _pc_table(states: pd.DataFrame, rank: pd.Series, kernel_samples: pd.Series) -> pd.DataFrame:
    """Samples per PC and warp state, kernels in `rank` order, then busiest PC (PC_COLUMNS)."""
    pc_key = ["kernel", "pc_offset", "cubin_crc"]
    pcs = states.groupby(pc_key + ["state"])["samples"].sum().reset_index()
    pc_samples = states.groupby(pc_key)["samples"].sum().rename("pc_samples").reset_index()
    pcs = pcs.merge(pc_samples[pc_samples["pc_samples"] > 0], on=pc_key)
    pcs["kernel_pct"] = _percent(pcs["pc_samples"], pcs["kernel"].map(kernel_samples))
    pcs["pct"] = _percent(pcs["samples"], pcs["pc_samples"])
    pcs["rank"] = pcs["kernel"].map(rank)
    pcs = pcs.sort_values(["rank", "pc_samples", "pc_offset", "cubin_crc", "samples", "state"],
                          ascending=[True, False, True, True, False, True])
    pcs = pcs.rename(columns={"state": "reason"})
    pcs["cubin_crc"] = pcs["cubin_crc"].astype(np.uint64)
    return pcs[PC_COLUMNS].reset_index(drop=True)


def stall_frames(traces: Union[TraceOrPath, Iterable[TraceOrPath]],
                 kernel: Optional[str] = None, by: str = "kernel") -> Dict[str, pd.DataFrame]:
    """See ``warpscope.stalls``."""
    if by not in ("kernel", "pc"):
        raise ValueError(f"by must be 'kernel' or 'pc', not {by!r}")
    pattern = re.compile(kernel) if kernel else None
    from . import native
    if native.available():  # the C++ stall report, which the CLI prints
        paths = [t.path if isinstance(t, TraceFile) else t for t in _as_traces(traces)]
        return native.stalls(paths, kernel or "", by)
    return python_stall_frames(traces, pattern, by)


def python_stall_frames(traces: Union[TraceOrPath, Iterable[TraceOrPath]],
                        pattern: "Optional[re.Pattern[str]]", by: str) -> Dict[str, pd.DataFrame]:
    """``stall_frames`` computed here from the frames: what runs without the extension."""
    parts, demangled = _read_rows(traces)
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    detail_key, detail_columns = ("reasons", REASON_COLUMNS) if by == "kernel" else (
        "pcs", PC_COLUMNS)
    if rows.empty:
        return {"kernels": _empty(KERNEL_COLUMNS), detail_key: _empty(detail_columns)}
    functions = rows["function_name"].unique()
    names = {f: demangled.get(f, f) for f in functions}
    rows["kernel"] = rows["function_name"].map(names).astype(str)
    if pattern is not None:
        keep = {n for n in set(names.values()) if pattern.search(n)}
        rows = rows[rows["kernel"].isin(keep)]

    states = rows[~rows["not_issued"]]
    by_kernel = _kernel_table(rows, states)
    if by_kernel.empty:
        return {"kernels": by_kernel, detail_key: _empty(detail_columns)}
    rank = pd.Series(np.arange(len(by_kernel)), index=by_kernel["kernel"])
    kernel_samples = by_kernel.set_index("kernel")["samples"]
    states = states[states["kernel"].isin(rank.index)]
    if by == "kernel":
        return {"kernels": by_kernel, "reasons": _reason_table(states, rank, kernel_samples)}
    return {"kernels": by_kernel, "pcs": _pc_table(states, rank, kernel_samples)}
