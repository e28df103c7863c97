"""The CLI's analyses as Python functions, made from its list of analyses: for every row of
the list (``rows_table.ROWS``, a copy of the C++ rows the extension describes) a function
``warpscope.NAME(traces, **options)`` that returns the tables of ``warpscope NAME --table T``
as DataFrames, ``scalars`` (one row) first, then one frame per table. Each takes its traces
alike (``inputs.trace_arguments``: a path, a ``TraceFile``, several, a folder or a glob
pattern; ``diff`` a BASE and a NEW), names its options as the CLI's flags (dashes as
underscores, ``from_`` for ``--from``) and raises ``warpscope.Error`` for bad input. They run
the CLI's own C++ code through the extension (docs/python.md, *Analyses*); ``export`` is in
``warpscope.export``."""

from __future__ import annotations

import inspect
import keyword
import warnings
from typing import Any, Callable, Dict, List

from . import native, rows_table
from .errors import Error
from .inputs import trace_arguments

Frames = Dict[str, Any]

# The functions' defaults where they differ from the CLI's (``run`` keeps the CLI's): a frame
# holds every row, a screen does not (stalls: every reason of every kernel).
PYTHON_DEFAULTS = {("stalls", "top"): 0}

# Keyword names of earlier releases, kept for one release: (analysis, old) -> new.
DEPRECATED_KEYWORDS = {("summary", "reports"): "report", ("job", "step"): "step_range"}


def keyword_of(flag: str) -> str:
    """A flag's keyword: dashes as underscores; ``from`` is Python's, so ``from_``."""
    name = flag.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


def _flag_text(value: Any) -> str:
    """An option's value as the CLI's flag takes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def options_of(row: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A row's options, the slice options last for the rows that load traces."""
    return list(row["options"]) + (list(rows_table.SLICE_OPTIONS) if row["slice"] else [])


def _default(name: str, option: Dict[str, Any]) -> Any:
    """An option's default as a Python value: None where the CLI's is none (or a file)."""
    if (name, option["name"]) in PYTHON_DEFAULTS:
        return PYTHON_DEFAULTS[(name, option["name"])]
    kind, text = option["kind"], option["default"]
    if kind == "switch":
        return False
    if kind in ("count", "integer") and text:
        return int(text)
    return text if kind == "text" and text else None


def _flags(name: str, row: Dict[str, Any], given: Dict[str, Any]) -> Dict[str, str]:
    """The keywords given as the flags of `row` (flag name -> text); Error for an unknown
    keyword, a warning for a deprecated one."""
    by_keyword = {keyword_of(o["name"]): o for o in options_of(row)}
    flags: Dict[str, str] = {}
    for key, value in given.items():
        if (name, key) in DEPRECATED_KEYWORDS:
            new = DEPRECATED_KEYWORDS[(name, key)]
            warnings.warn(f"warpscope: {name}({key}=...) is now {name}({new}=...), as the "
                          f"CLI's --{new.replace('_', '-')}; the old name goes in the next "
                          "release", DeprecationWarning, stacklevel=4)  # the caller of NAME()
            if given.get(new) is not None:
                continue
            key = new
        option = by_keyword.get(key)
        if option is None:
            raise Error(f"warpscope: {name} has no option {key!r}; its options: "
                        f"{', '.join(by_keyword)}")
        if value is None or value is False or value == "":  # not given (the old defaults)
            continue
        flags[option["name"]] = _flag_text(value)
    return flags


def export_flags(options: Dict[str, Any]) -> Dict[str, str]:
    """The keywords of ``warpscope.export`` besides format and output, as its flags."""
    row = {"name": "export", "options": rows_table.EXPORT_OPTIONS, "slice": False}
    return _flags("export", row, options)


def run(name: str, traces: Any, **options: Any) -> Frames:
    """Any analysis of the CLI's list by its command name (``warpscope help`` lists them),
    on `traces` as every function takes them, with `options` named as its flags (dashes as
    underscores, ``from_`` for --from; a switch is True). Returns its report's tables, as
    ``warpscope NAME --table TABLE`` gives them: ``scalars`` (one row) first. ``Error`` for an
    unknown analysis or option, a value the CLI refuses, or traces that do not fit it."""
    row = rows_table.ROW_BY_NAME.get(name)
    if row is None:
        raise Error(f"warpscope: no analysis named {name}; the analyses: "
                    f"{', '.join(rows_table.ROW_BY_NAME)}")
    return native.run_row(name, trace_arguments(traces), _flags(name, row, options))


def rows() -> list:
    """The CLI's list of analyses: each ``{"name", "summary", "input", "options": [...]}``,
    as the extension describes it (without it: the package's copy, ``rows_table``)."""
    if native.has_extension():
        return native.rows()
    return [dict(r, options=options_of(r)) for r in rows_table.ROWS]


def _tail(frames: Frames, options: Dict[str, Any]) -> Frames:
    if not options.get("instances"):
        frames.pop("instances", None)
    return frames


def _advise(frames: Frames, options: Dict[str, Any]) -> Frames:
    frames["summary"] = frames["scalars"]  # the old key, deprecated (CHANGELOG.md)
    return frames


# What a function does to the report's tables after the run, for compatibility.
_ADJUST: Dict[str, Callable[[Frames, Dict[str, Any]], Frames]] = {"tail": _tail,
                                                                   "advise": _advise}


def _docstring(row: Dict[str, Any]) -> str:
    lines = [f"``warpscope {row['name']}``: {row['summary']}.", "",
             "Returns the report's tables as DataFrames (``scalars`` first); raises "
             "``warpscope.Error`` for bad input. Options, as the CLI's flags:", ""]
    for option in options_of(row):
        default = _default(row["name"], option)
        lines.append(f"- ``{keyword_of(option['name'])}`` ({option['kind']}, default "
                     f"{default!r}): {option['help']}")
    return "\n".join(lines)


def _signature(row: Dict[str, Any]) -> inspect.Signature:
    P = inspect.Parameter
    if row["input"] == "pair":
        first = [P("base", P.POSITIONAL_OR_KEYWORD), P("new", P.POSITIONAL_OR_KEYWORD)]
    else:
        first = [P("traces", P.POSITIONAL_OR_KEYWORD)]
    return inspect.Signature(first + [P(keyword_of(o["name"]), P.KEYWORD_ONLY,
                                        default=_default(row["name"], o))
                                      for o in options_of(row)])


def _function(row: Dict[str, Any]) -> Callable[..., Frames]:
    """The function of one row."""
    name = row["name"]
    defaults = {keyword_of(flag): value for (of, flag), value in PYTHON_DEFAULTS.items()
                if of == name}
    adjust = _ADJUST.get(name, lambda frames, options: frames)
    if row["input"] == "pair":
        def analysis(base: Any, new: Any, **options: Any) -> Frames:
            traces = trace_arguments(base) + trace_arguments(new)
            return adjust(run(name, traces, **{**defaults, **options}), options)
    else:
        def analysis(traces: Any, **options: Any) -> Frames:  # type: ignore[misc]
            return adjust(run(name, traces, **{**defaults, **options}), options)
    analysis.__name__ = analysis.__qualname__ = name
    analysis.__module__ = "warpscope"
    analysis.__doc__ = _docstring(row)
    analysis.__signature__ = _signature(row)  # type: ignore[attr-defined]
    return analysis


# Every row's function by name: warpscope.summary, warpscope.stalls, ...
ANALYSES: Dict[str, Callable[..., Frames]] = {r["name"]: _function(r) for r in rows_table.ROWS}
globals().update(ANALYSES)
