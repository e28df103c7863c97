"""The committed descriptor matches the proto, and the classes work on this runtime."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

import warpscope
from warpscope import schema

REPO = Path(__file__).resolve().parents[2]
PROTO = REPO / "proto" / "warpscope" / "v1" / "trace.proto"


def test_every_message_and_enum_value_is_exposed():
    file = schema.TracePacket.DESCRIPTOR.file
    for name in file.message_types_by_name:
        assert getattr(schema, name).DESCRIPTOR.full_name == f"warpscope.v1.{name}"
    assert schema.COPY_KIND_HTOD == 1 and schema.MEMORY_KIND_MANAGED == 5
    assert schema.FORMAT_MAJOR == 1


def test_every_packet_kind_has_a_reader():
    """A new oneof member needs a frame (or a deliberate place in TraceFile metadata)."""
    from warpscope.frames import _EVENT_FRAMES, _FIELD_FRAMES
    handled = {kind for kind, _, _ in [*_EVENT_FRAMES.values(), *_FIELD_FRAMES.values()]} | {
        "header", "device", "interned_string", "launch_config", "thread", "pm_metric_set",
        "pm_sample", "pm_counter_data", "pc_stall_reasons", "cubin", "stats", "end_of_trace",
        "context", "notice", "stack_frame", "call_stack"}
    oneof = schema.TracePacket.DESCRIPTOR.oneofs_by_name["data"]
    assert {f.name for f in oneof.fields} == handled


@pytest.mark.skipif(not PROTO.exists(), reason="not in a warpscope source tree")
@pytest.mark.skipif(shutil.which("protoc") is None, reason="protoc is not installed")
def test_descriptor_matches_proto(tmp_path):
    out = tmp_path / "trace.desc"
    subprocess.run(["protoc", f"--descriptor_set_out={out}", f"-I{REPO / 'proto'}",
                    "warpscope/v1/trace.proto"], check=True)
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    committed = descriptor_pb2.FileDescriptorSet.FromString(schema.DESCRIPTOR_PATH.read_bytes())
    assert fresh == committed, ("python/warpscope/trace.desc is stale: regenerate it with "
                                "protoc --descriptor_set_out=python/warpscope/trace.desc "
                                "-Iproto warpscope/v1/trace.proto")


def test_version_is_exported():
    assert warpscope.__version__
