"""Portable run bundles (``studio.bundles``): export a session, import one as a
read-only session of the importing user."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from studio import bundles
from studio.models import Session


def export_bundle(session: Session, *, zipped: bool = False) -> tuple[bytes, str, str]:
    """``session`` as a bundle: its bytes, content type and file name."""
    bundle = bundles.export_bundle(session)
    stem = f"session-{session.pk}"
    if zipped:
        return bundles.bundle_zip(bundle), "application/zip", stem + bundles.ZIP_SUFFIX
    return bundles.bundle_json(bundle), "application/json", f"{stem}.studio-run.json"


def import_bundle(owner: AbstractBaseUser, name: str, data: bytes) -> Session:
    """The session a bundle file (``.json`` or ``.studio-run.zip``) becomes, owned by
    ``owner`` and read-only; ``InvalidInputError`` (field ``bundle``) for a bundle that
    is too large, broken, of an unknown version, carries a secret or is inconsistent,
    with nothing stored."""
    return bundles.import_checked(owner, bundles.read_upload(name, data))
