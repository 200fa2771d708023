"""Portable run bundles (``docs/bundles.md``): a session exported as one versioned JSON
document (``format``: the pydantic models its JSON Schema is generated from),
``export`` writes one, ``checks`` reads an uploaded one trusting nothing in it, and
``imports`` stores a checked one as a read-only session of the importing user."""

from studio.bundles.checks import MAX_BYTES, Checked, read_upload
from studio.bundles.export import ZIP_SUFFIX, bundle_json, bundle_zip, export_bundle
from studio.bundles.format import FORMAT, VERSION, Bundle, json_schema
from studio.bundles.imports import import_checked

__all__ = [
    "FORMAT",
    "MAX_BYTES",
    "VERSION",
    "ZIP_SUFFIX",
    "Bundle",
    "Checked",
    "bundle_json",
    "bundle_zip",
    "export_bundle",
    "import_checked",
    "json_schema",
    "read_upload",
]
