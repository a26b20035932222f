"""Exceptions with locations: every bad-input error names the file, record and field."""

from __future__ import annotations


class VeribenchError(Exception):
    """Base class of veribench errors shown to users without a traceback."""


class InputError(VeribenchError):
    """Bad input data.

    Args:
        message: what is wrong.
        file: the file the record came from.
        record: record index (0-based) or id.
        field: the offending field name.
    """

    def __init__(self, message: str, *, file: str | None = None, record: object | None = None, field: str | None = None):
        self.file, self.record, self.field, self.reason = file, record, field, message
        where = []
        if file is not None:
            where.append(f"file {file}")
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class RegistryError(VeribenchError, KeyError):
    """Unknown plug-in name; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0]) if self.args else ""


class ProtocolError(VeribenchError):
    """Protocol file invalid, or changed after commit without an amendment."""
