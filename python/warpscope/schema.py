"""The trace schema as Python message classes, built at import time from ``trace.desc``.

Why a descriptor and not generated ``_pb2`` modules: generated code is tied to the protobuf
runtime that generated it (3.21 code refuses to load on 5.x+ and the reverse), while a
binary FileDescriptorSet works with every runtime. The classes live in a private descriptor
pool so that a host program carrying its own copy of the schema cannot clash with ours.

Every message of ``warpscope/v1/trace.proto`` becomes an attribute of this module
(``schema.TracePacket``, ``schema.KernelEvent``, ...), and so does every enum value
(``schema.COPY_KIND_HTOD == 1``), as in a generated module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DESCRIPTOR_PATH = Path(__file__).with_name("trace.desc")
PACKAGE = "warpscope.v1"


def _message_class(descriptor: Any) -> Any:
    """Returns the class for a message descriptor on old and new protobuf runtimes.

    ``GetMessageClass`` appeared in protobuf 4.x and ``MessageFactory.GetPrototype`` was
    removed in 5.x, so neither alone covers Debian 12 (3.21) and pip's latest.
    """
    get_message_class = getattr(message_factory, "GetMessageClass", None)
    if get_message_class is not None:
        return get_message_class(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)


def _load() -> Dict[str, Any]:
    file_set = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_PATH.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    names: Dict[str, Any] = {}
    for file_proto in file_set.file:
        pool.AddSerializedFile(file_proto.SerializeToString())
    for file_proto in file_set.file:
        if file_proto.package != PACKAGE:
            continue
        file_descriptor = pool.FindFileByName(file_proto.name)
        for name, descriptor in file_descriptor.message_types_by_name.items():
            names[name] = _message_class(descriptor)
        for enum in file_descriptor.enum_types_by_name.values():
            for value in enum.values:
                names[value.name] = value.number
    if "TracePacket" not in names:
        raise ImportError(f"warpscope: {DESCRIPTOR_PATH} does not define {PACKAGE}.TracePacket; "
                          "reinstall the warpscope package")
    return names


globals().update(_load())


def __getattr__(name: str) -> Any:
    """Only reached for names trace.desc lacks; declared so type checkers accept the rest."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The format version this reader understands: it refuses files with a newer major.
FORMAT_MAJOR = 1
FORMAT_MINOR = 7
