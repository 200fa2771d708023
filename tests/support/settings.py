"""``studio.settings`` for the servers and commands the tests start (Daphne, ``manage.py``,
run workers), with one change: a fast password hasher.

Checking a password against Django's PBKDF2 hash takes most of a second of CPU, by
design, and the end-to-end tests sign in through the form and the token API a few times
per module on two shared cores. Nothing they check depends on how a password is hashed
(tests/studio hash with MD5 too, in ``_fast_password_hashing``). Only servers started
under pytest use this module (tests/conftest.py); benchmarks keep ``studio.settings``.
"""

from studio.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
