"""The stats table: every counter the writer and the collectors put in Stats packets, with
its severity ("info", "data_loss", "error") and what it means.

The rows come from the C++ table (proto/writer/stats_table.h) through the generated
``stats_table`` module, so ``python -m warpscope info`` and ``warpscope info`` explain a
counter in the same words.

    from warpscope.stats import find_stat
    find_stat("pm_sampling.gaps").meaning   # 'times without samples between two samples'
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

from .stats_table import ROWS


class StatDef(NamedTuple):
    """One row. A name ending in ``.<...>`` stands for a family (``collector_errors.<
    collector>``): every counter that starts with the part before ``<``."""
    name: str
    severity: str
    meaning: str


ALL_STATS: Tuple[StatDef, ...] = tuple(StatDef(*row) for row in ROWS)
_BY_NAME = {stat.name: stat for stat in ALL_STATS}
_FAMILIES = tuple((stat.name[:stat.name.index("<")], stat) for stat in ALL_STATS
                  if "<" in stat.name)


def find_stat(name: str) -> Optional[StatDef]:
    """The row of `name` (a family's row for a name in it), or None for a name the table
    lacks (a newer or foreign producer)."""
    stat = _BY_NAME.get(name)
    if stat is not None:
        return stat
    for prefix, family in _FAMILIES:
        if len(name) > len(prefix) and name.startswith(prefix):
            return family
    return None
