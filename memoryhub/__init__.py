# The Celery app must be imported with the project package: otherwise
# @shared_task binds to a default app that publishes to amqp://localhost.
from memoryhub.celery import app as celery_app

__all__ = ("celery_app",)
