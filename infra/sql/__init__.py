"""SQL results store: schema, migrations and the store itself (SQLite or PostgreSQL)."""
