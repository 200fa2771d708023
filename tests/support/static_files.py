"""Static files for the servers the tests start: collected and compressed as in
production (``whitenoise.storage.CompressedStaticFilesStorage``), with gzip only.

Brotli at its highest quality, WhiteNoise's choice, took 16 s of CPU per
``collectstatic`` (most of it the API docs' bundles), on two cores shared by the whole
suite; gzip takes a fraction of a second. No test reads a ``.br`` file: browsers get the
gzip copy instead, served by the same WhiteNoise code.
"""

from __future__ import annotations

from typing import Any

from whitenoise.compress import Compressor  # type: ignore[import-untyped]
from whitenoise.storage import CompressedStaticFilesStorage  # type: ignore[import-untyped]


class GzipStaticFilesStorage(CompressedStaticFilesStorage):  # type: ignore[misc]  # untyped
    def create_compressor(self, **kwargs: Any) -> Compressor:
        return Compressor(use_brotli=False, **kwargs)
