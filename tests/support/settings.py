"""``studio.settings`` for the servers and commands the tests start (Daphne, ``manage.py``,
run workers), with three changes: a fast password hasher, static files compressed with
gzip only, and static files the browser may keep for ten minutes.

Checking a password against Django's PBKDF2 hash takes most of a second of CPU, by
design, and the end-to-end tests sign in through the form and the token API a few times
per module on two shared cores. Nothing they check depends on how a password is hashed
(tests/studio hash with MD5 too, in ``_fast_password_hashing``). Compressing the static
files with Brotli as well took 16 s of ``collectstatic`` (tests/support/static_files.py).
The end-to-end servers run with ``STUDIO_DEBUG=1``, where WhiteNoise tells the browser
to keep no static file, so each tab fetched every ES module of its page again through
Daphne (25 requests for the agent builder): a seventh of the every-page sweep's time. A
deployment (``DEBUG`` off) lets browsers keep them 60 s; the tests' browsers keep them
while their browser context lives.

Only servers started under pytest use this module (tests/conftest.py), and the
benchmark scripts' smoke tests (tests/support/bench.py); benchmarks run on their own
keep ``studio.settings``.
"""

from studio.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "tests.support.static_files.GzipStaticFilesStorage"},
}
# Static files in the browser's cache (see above); WhiteNoise's default is 0 in DEBUG.
WHITENOISE_MAX_AGE = 600
