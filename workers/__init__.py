"""Celery app and judging tasks."""
