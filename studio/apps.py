from django.apps import AppConfig
from django.conf import settings


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The run manager listens to run_queued and run_cancelled.
        from studio import runs, services  # noqa: F401

        if settings.STUDIO_RUN_EXECUTION == "worker":
            # Servers only queue runs; `manage.py run_worker` processes poll for them
            # (studio.worker). Cancellations still reach the manager, which then only
            # tells the session's viewers.
            services.run_queued.disconnect(dispatch_uid="studio.runs.run_queued")
