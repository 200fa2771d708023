from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Signal receivers: the run manager listens to run_queued and run_cancelled;
        # logout, password change and deactivation close the user's websockets.
        from studio import auth, runs  # noqa: F401
