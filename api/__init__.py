"""HTTP intake API and dashboard."""
