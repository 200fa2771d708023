"""The admin (``/admin/``, staff only: Django's admin site checks ``is_staff``).
Versions and events are read-only, secrets write-only, and actions go through
``services`` like every other edge."""

from studio.admin import sessions, site

__all__ = ["sessions", "site"]
