"""The admin (``/admin/``, staff only: Django's admin site checks ``is_staff``).
Versions and events are read-only, secrets write-only, and actions go through
``services`` like every other edge."""

from django.contrib import admin

from studio.admin import approvals, budgets, datasets, evals, remote_agents, sessions, site
from studio.auth import AdminSignInForm

admin.site.site_header = "Studio administration"
admin.site.site_title = "Studio admin"
# Sign-in attempts are counted on the admin's page as on Studio's (studio.auth).
admin.site.login_form = AdminSignInForm

__all__ = ["approvals", "budgets", "datasets", "evals", "remote_agents", "sessions", "site"]
