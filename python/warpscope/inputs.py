"""The traces an analysis reads, given alike to every function of the package: one trace (a
path or a ``TraceFile``), several, a folder (its ``.wst`` files, by name, as the CLI reads a
folder) or a glob pattern (``"run/rank*.wst"``)."""

from __future__ import annotations

import glob
import os
from typing import Any, List

from .errors import Error

_GLOB_CHARACTERS = frozenset("*?[")


def _items(traces: Any) -> List[Any]:
    if isinstance(traces, (str, bytes)) or hasattr(traces, "__fspath__") or hasattr(
            traces, "to_dataframes"):
        return [traces]
    try:
        return list(traces)
    except TypeError:
        raise Error(f"warpscope: traces must be paths, a folder or a glob pattern, not "
                    f"{type(traces).__name__}") from None


def trace_arguments(traces: Any) -> List[str]:
    """`traces` as the CLI's arguments, unexpanded (folders and globs as given): for the
    analyses the extension runs, which expand them as the CLI does."""
    args = [item.path if hasattr(item, "to_dataframes") else os.fsdecode(os.fspath(item))
            for item in _items(traces)]
    if not args:
        raise Error(f"warpscope: no trace given ({traces!r})")
    return args


def trace_paths(traces: Any) -> List[str]:
    """The paths of `traces`, in order; raises ``Error`` when they name no trace."""
    paths: List[str] = []
    for item in _items(traces):
        paths.extend(_expand(item))
    if not paths:
        raise Error(f"warpscope: no trace given ({traces!r})")
    return paths


def one_trace_path(traces: Any, analysis: str) -> str:
    """The path of the one trace an analysis of one trace reads."""
    paths = trace_paths(traces)
    if len(paths) != 1:
        raise Error(f"warpscope: {analysis} reads one trace, not {len(paths)}; call it once "
                    "per trace")
    return paths[0]


def _expand(item: Any) -> List[str]:
    if hasattr(item, "to_dataframes"):  # a TraceFile
        return [item.path]
    path = os.fsdecode(os.fspath(item))
    if os.path.isdir(path):
        found = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".wst"))
        if not found:
            raise Error(f"warpscope: {path} is a folder without .wst traces")
        return found
    if _GLOB_CHARACTERS & set(path) and not os.path.exists(path):
        found = sorted(glob.glob(path))
        if not found:
            raise Error(f"warpscope: no file matches {path}")
        return found
    return [path]
