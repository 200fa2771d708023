"""The session page's Artifacts panel: each artifact's newest version, with its older
versions, a preview (text as text, raster images through the download URL) and a
download link. Names, texts and declared types reach the page as text only."""

from __future__ import annotations

from dataclasses import dataclass

from studio import artifacts
from studio.api.artifacts import download_url
from studio.models import Artifact, Session

MAX_SHOWN = 50
"""Artifacts listed on the page; the API lists them all."""


@dataclass(frozen=True, slots=True)
class Shown:
    artifact: Artifact
    versions: list[Artifact]
    download_url: str
    image_url: str | None
    text: str | None
    """The start of a text artifact; ``None`` for others or when its bytes are gone."""


def panel(session: Session) -> list[Shown]:
    rows = list(Artifact.objects.filter(session=session).order_by("name", "-version"))
    by_name: dict[str, list[Artifact]] = {}
    for row in rows:
        by_name.setdefault(row.name, []).append(row)
    return [_shown(versions) for versions in list(by_name.values())[:MAX_SHOWN]]


def _shown(versions: list[Artifact]) -> Shown:
    newest = versions[0]
    text = None
    if newest.is_text:
        try:
            text = artifacts.preview_text(newest)
        except FileNotFoundError:
            text = None
    image = download_url(newest, inline=True) if newest.is_image else None
    return Shown(newest, versions, download_url(newest), image, text)
