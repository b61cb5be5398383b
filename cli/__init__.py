"""The `tilejudge` command: offline judging, the local stack, and every client of the HTTP API."""
