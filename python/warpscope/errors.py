"""What the package raises and warns: ``Error`` for any bad input, ``TraceError`` (one kind of
it: the file cannot be read on) and ``TraceWarning`` (analysis of a trace with counted
problems)."""

from __future__ import annotations

from typing import Optional


class Error(ValueError):
    """Bad input to warpscope: a trace that cannot be read (``TraceError``), no trace where
    one was asked for, or an option out of its range. Every function of the package raises
    this one type for bad input; it is a ``ValueError``, which some raised before."""


class TraceError(Error):
    """The one exception the reader raises: the file is missing, not a trace, or corrupt.

    ``path`` and ``offset`` (byte offset into the file, when it applies) let scripts that
    read many files report which one failed and where.
    """

    def __init__(self, message: str, path: Optional[str] = None,
                 offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


class _CorruptData(TraceError):
    """Bytes that cannot be a packet; ``what`` says why without the path and offset."""

    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__(f"warpscope: {path}: corrupt data at byte offset {offset}: {what} "
                         "(packets before it can still be read by iterating)",
                         path=path, offset=offset)
        self.what = what


class TraceWarning(UserWarning):
    """Warned when analysis runs on a trace that was cut short or had counted problems."""
