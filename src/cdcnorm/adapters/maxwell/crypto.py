"""Maxwell's `encrypt=data` / `encrypt=all`: AES-128/CBC/PKCS5 with the producer's `secret_key` and a per-message
IV, both parts Base64 in `"encrypted": {"iv", "bytes"}`.

The `cryptography` package is an optional extra (`cdcnorm[maxwell]`): without it an encrypted message is refused
with the one-line reason, never guessed at.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cdcnorm.errors import DecodeError

INSTALL = ("decrypting Maxwell messages needs the optional `cryptography` package: "
           "pip install 'cdcnorm[maxwell]'")


def decrypt(block: Any, key: str | None) -> bytes:
    """The plaintext of an `encrypted` block (JSON text): raises DecodeError without a key, the package, or when
    the key does not fit."""
    if not key:
        raise DecodeError("unsupported_format", "an encrypted Maxwell message (encrypt=data or encrypt=all): give "
                                                "the producer's secret_key as the `encryption_key` option")
    if not isinstance(block, dict) or not isinstance(block.get("iv"), str) or not isinstance(block.get("bytes"), str):
        raise DecodeError("bad_message", "an `encrypted` block without its Base64 `iv` and `bytes`")
    try:
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        raise DecodeError("unsupported_format", INSTALL) from None
    try:
        iv, data = base64.b64decode(block["iv"], validate=True), base64.b64decode(block["bytes"], validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError("bad_base64", "the `iv` or `bytes` of an encrypted Maxwell message is not Base64") from None
    try:
        cipher = Cipher(algorithms.AES(key.encode("utf-8")), modes.CBC(iv)).decryptor()
        padded = cipher.update(data) + cipher.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError as exc:
        raise DecodeError("bad_message", f"the encrypted Maxwell message does not decrypt with the given "
                                         f"`encryption_key` ({exc})") from None
