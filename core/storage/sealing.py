"""Credentials at rest: Fernet encryption under COUNCIL_ENCRYPTION_KEY, several keys at once for rotation."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

KEY_VARIABLE = "COUNCIL_ENCRYPTION_KEY"
NEW_KEY_HINT = ("generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'")


class BadKey(ValueError):
    """The key setting is missing, malformed, or cannot read what is stored; the message says which."""


FERNET_VERSION = 0x80
FERNET_MIN_BYTES = 73  # version, timestamp, IV, one cipher block and the HMAC


def looks_sealed(value: str) -> bool:
    """Whether `value` has the form of a Fernet token, under whatever key: never a credential in clear (Slack's
    start with `xox`), so one that no key given can read is missing its key, not stored in clear."""
    try:
        raw = base64.urlsafe_b64decode(value.encode())
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= FERNET_MIN_BYTES and raw[0] == FERNET_VERSION


def missing_key(where: str) -> BadKey:
    return BadKey(f"{where} is not sealed under any key in {KEY_VARIABLE}: the key it was sealed with (the old one) "
                  "is missing; give both, the new first (\"new,old\"), and run the reseal again. Nothing was "
                  "written.")


@dataclass(frozen=True)
class Sealer:
    """Encrypts with the first key and decrypts with any of them (MultiFernet): rotation is "new,old", then a
    reseal of what is stored, then "new"."""

    fernet: MultiFernet

    @classmethod
    def from_keys(cls, value: str) -> Sealer:
        keys = [k for k in value.replace(",", " ").split() if k]
        if not keys:
            raise BadKey(f"{KEY_VARIABLE} is not set; {NEW_KEY_HINT}")
        try:
            return cls(MultiFernet([Fernet(k.encode()) for k in keys]))
        except ValueError:
            raise BadKey(f"{KEY_VARIABLE} must be Fernet keys (32 bytes, url-safe base64), comma-separated, the "
                         f"newest first; {NEW_KEY_HINT}") from None

    def seal(self, plain: str) -> str:
        return self.fernet.encrypt(plain.encode()).decode()

    def unseal(self, sealed: str) -> str:
        try:
            return self.fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise BadKey(f"a stored credential cannot be read with {KEY_VARIABLE}: was the key changed without "
                         "keeping the old one after the new (\"new,old\") until the reseal?") from None

    def sealed(self, value: str) -> bool:
        """Whether `value` is ciphertext under one of the keys (not a credential stored in clear)."""
        try:
            self.fernet.decrypt(value.encode())
        except (InvalidToken, ValueError):
            return False
        return True

    def reseal(self, sealed: str, where: str = "a stored credential") -> str:
        """The same secret encrypted under the first key; BadKey naming `where` when no key given reads it."""
        try:
            return self.fernet.rotate(sealed.encode()).decode()
        except InvalidToken:
            raise missing_key(where) from None
