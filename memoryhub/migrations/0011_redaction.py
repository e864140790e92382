"""Redaction, the one mutation history allows (services.redaction):
`redacted_at`/`redacted_by` on history, log, audit and proposal rows, the
guards of memoryhub.immutability reinstalled with their redaction exception
(and, on PostgreSQL, the SECURITY DEFINER function memoryhub_redact()),
the workspace's log retention and the record of subject erasures.

The new columns are nullable without defaults, so SQLite adds them with
ALTER TABLE and keeps the log and file tables (and their search-index
triggers) as they are."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from memoryhub import immutability


def reinstall_guards(apps, schema_editor):
    immutability.install(schema_editor.connection)


def previous_guards(apps, schema_editor):
    # Going back leaves the guards to the next migrate's reinstall (apps.py);
    # the redaction exception is inert without the flag.
    pass


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0010_change_actor_names'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='auditevent',
            name='redacted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='redacted_by',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='historicalmemoryfile',
            name='redacted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='historicalmemoryfile',
            name='redacted_by',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='logentry',
            name='redacted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='logentry',
            name='redacted_by',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='proposal',
            name='redacted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='proposal',
            name='redacted_by',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='workspace',
            name='log_retention_days',
            field=models.PositiveIntegerField(blank=True, default=365, null=True),
        ),
        migrations.CreateModel(
            name='ErasureRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('subject_hash', models.CharField(db_index=True, max_length=64)),
                ('pseudonym', models.CharField(max_length=64)),
                ('counts', models.JSONField(blank=True, default=dict)),
                ('requested_by_username', models.CharField(blank=True, default='', max_length=150)),
                ('approved_by_username', models.CharField(blank=True, default='', max_length=150)),
                ('requested_at', models.DateTimeField()),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('approved_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('change', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='erasure', to='memoryhub.change')),
                ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='erasures', to='memoryhub.workspace')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.RunPython(reinstall_guards, previous_guards),
    ]
