from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("studio", "0003_mcp_server"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="timing",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]
