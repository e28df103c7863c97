"""The stats table in Python: the same rows as the C++ table (docs/format.md lists them and
stats_table_test keeps that list equal to the C++ one), the family rule, and ``info``."""

from __future__ import annotations

import re
from pathlib import Path

import tracebuilder as tb
import warpscope
from warpscope import schema
from warpscope.__main__ import main
from warpscope.stats import ALL_STATS, StatDef, find_stat

FORMAT_MD = Path(__file__).resolve().parents[2] / "docs" / "format.md"


def format_md_rows():
    text = FORMAT_MD.read_text(encoding="utf-8")
    table = text.split("<!-- stats table begin", 1)[1].split("<!-- stats table end", 1)[0]
    return [StatDef(m[0], m[1].replace(" ", "_"), m[2])
            for m in re.findall(r"^\| `([^`]+)` \| ([a-z ]+) \| (.*) \|$", table, re.M)]


def test_rows_equal_the_documented_table():
    rows = format_md_rows()
    assert len(rows) > 50
    assert list(ALL_STATS) == rows


def test_names_unique_and_severities_known():
    names = [s.name for s in ALL_STATS]
    assert len(names) == len(set(names))
    assert {s.severity for s in ALL_STATS} == {"info", "data_loss", "error"}


def test_find_stat_exact_family_and_unknown():
    gaps = find_stat("pm_sampling.gaps")
    assert gaps == StatDef("pm_sampling.gaps", "data_loss",
                           "times without samples between two samples")
    family = find_stat("collector_errors.pm_sampling")
    assert family is not None and family.name == "collector_errors.<collector>"
    assert family.severity == "error"
    kind = find_stat("writer.events_written.kernel")
    assert kind is not None and kind.name == "writer.events_written.<packet field>"
    assert find_stat("writer.events_written").name == "writer.events_written"
    assert find_stat("collector_errors.") is None  # a family needs a member
    assert find_stat("foreign.counter") is None


def test_info_shows_table_severity_and_meaning(tmp_path, capsys):
    s = schema
    packets = tb.every_kind()[:-1] + [
        tb.packet(stats=s.Stats(timestamp_ns=500, final=True, counters=[
            # The file says info; the table says data loss, and info shows the table's.
            s.StatCounter(name="pm_sampling.gaps", value=2, severity=s.SEVERITY_INFO),
            s.StatCounter(name="collector_errors.pc_sampling", value=1,
                          severity=s.SEVERITY_ERROR),
            s.StatCounter(name="foreign.counter", value=7, severity=s.SEVERITY_DATA_LOSS)])),
        tb.end(500)]
    path = tb.write(tmp_path / "t.wst", packets)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  stats (final):" in out
    assert ("    pm_sampling.gaps = 2 [data loss]: times without samples between two samples"
            in out)
    assert ("    collector_errors.pc_sampling = 1 [error]: a collector (or the session) "
            "failed and disabled itself" in out)
    assert "    foreign.counter = 7 [data loss]\n" in out


def test_the_package_exports_the_table():
    assert warpscope.find_stat is find_stat and warpscope.ALL_STATS is ALL_STATS
    assert warpscope.find_stat("writer.events_dropped.buffer_full").severity == "data_loss"


def test_every_import_counter_has_its_python_name():
    """Each import counter of the C++ reader (docs/format.md's list, which import_counters_test
    keeps equal to analyzers/model/import_counters.h) becomes a ``trace.issues`` entry under
    the pure-Python reader's name, is not an issue there, or keeps its C++ name on purpose."""
    from warpscope import native
    text = FORMAT_MD.read_text(encoding="utf-8")
    table = text.split("<!-- import counters begin", 1)[1].split("<!-- import counters end", 1)[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", table, re.M))
    assert len(documented) > 25
    handled = set(native.COUNTER_NAMES) | native._NOT_ISSUES | native.PASSED_THROUGH
    assert documented - handled == set()
    assert handled - documented == set()

