"""`yajsv SOCKET ARGS...` answered by `yajsv_standin.serving(SOCKET)`: what it prints and its
exit code. The standard library only, so that a run costs an interpreter's start (run it with
`python -I -S`), not an import of jsonschema."""

import json
import os
import socket
import sys


def main(argv: list[str]) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(argv[0])
        conn.sendall(json.dumps({"argv": argv[1:], "cwd": os.getcwd()}).encode() + b"\n")
        answer = json.loads(conn.makefile("rb").readline())
    sys.stdout.write(answer["out"])
    return int(answer["code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
