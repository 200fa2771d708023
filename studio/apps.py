from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Where runs execute (in the servers, or in workers) is chosen once, here.
        from studio import runs

        runs.configure()
