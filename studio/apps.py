from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Where runs execute (in the servers, or in workers) and where their traces go
        # (nowhere, or an OTLP collector) are chosen once, here.
        from studio import artifacts, runs  # noqa: F401  (artifacts: deleted rows' bytes)
        from studio.rollups import days  # noqa: F401  (its receivers: deleted runs)
        from studio.traces import otel

        runs.configure()
        otel.configure()
        from studio import evals  # eval runs move on as their case runs end

        evals.connect()
