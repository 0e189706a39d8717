"""One exception root for cdcnorm, with picklable subclasses (they cross to Spark executors)."""

from __future__ import annotations

DECODE_TAG = "[CDC_DECODE_ERROR]"


class CdcError(Exception):
    """Root of every error cdcnorm raises on purpose; its message is meant for a person (exit codes: cdcnorm.cli.guard)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __reduce__(self):
        return (type(self), (self.message,))


class UsageError(CdcError):
    """The user asked for something that cannot work as asked (bad option, unknown vendor, ...)."""


class DecodeError(CdcError):
    """A record could not be decoded; carries a stable `error_class` tag for the quarantine, and the bytes to
    keep when they are not the record's own raw bytes (e.g. an Avro record shown as JSON)."""

    def __init__(self, error_class: str, message: str, raw: bytes | None = None):
        super().__init__(message)
        self.error_class = error_class
        self.raw = raw

    def __reduce__(self):
        return (type(self), (self.error_class, self.message, self.raw))


class LakeError(CdcError):
    """The lake is missing, of an unknown version, or inconsistent."""
