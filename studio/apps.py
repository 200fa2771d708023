from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The run manager listens to run_queued (executing the run, or with worker
        # execution enqueueing it for a worker) and run_cancelled.
        from studio import runs  # noqa: F401
