"""The HTTP contract's routes, one module per resource; `api.app` includes each `router`."""
