"""Encryption at rest for provider API keys: Fernet tokens under rotating keys.

``settings.FIELD_ENCRYPTION_KEYS`` is a list, never ``SECRET_KEY``: the first key
encrypts, every key decrypts, so a new key can be put first while old tokens still read.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class DecryptionError(Exception):
    """A stored token that none of the configured keys can open."""


def _keys() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.FIELD_ENCRYPTION_KEYS])


def encrypt(plaintext: str) -> str:
    return _keys().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _keys().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "cannot decrypt a stored secret: is its key missing from FIELD_ENCRYPTION_KEYS?"
        ) from None


def rotate(token: str) -> str:
    """The same secret, re-encrypted under the first (current) key."""
    try:
        return _keys().rotate(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "cannot re-encrypt a stored secret: is its key missing from FIELD_ENCRYPTION_KEYS?"
        ) from None


def hint(plaintext: str) -> str:
    """What may be shown of a secret: its last four characters, if it is long enough
    that they give little away."""
    return f"...{plaintext[-4:]}" if len(plaintext) >= 12 else "..."
