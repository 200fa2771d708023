import django.core.validators
import django.utils.timezone
from django.db import migrations, models


def blobs_of_uploads(apps, schema_editor):  # type: ignore[no-untyped-def]
    """A Blob row for every blob an upload names: they are stored already."""
    Upload = apps.get_model("studio", "Upload")
    Blob = apps.get_model("studio", "Blob")
    ids = Upload.objects.values_list("blob_id", flat=True).distinct()
    Blob.objects.bulk_create([Blob(blob_id=i) for i in ids], ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ('studio', '0022_prompt_templates'),
    ]

    operations = [
        migrations.CreateModel(
            name='Blob',
            fields=[
                ('blob_id', models.CharField(max_length=64, primary_key=True, serialize=False, validators=[django.core.validators.RegexValidator('^[0-9a-f]{64}$', 'A SHA-256 in hex.')])),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name='upload',
            name='used_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(blobs_of_uploads, migrations.RunPython.noop),
    ]
