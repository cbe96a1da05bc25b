"""The local model server's command line: `python -m lessons.core.local_server_cli start|stop|status|prepare`.

Introduced in notebook 00 (setup). It drives `lessons.core.local_server` (the runtime: start, reuse, stop) and asks
`lessons.core.models` which chat model is active (`prepare`); it lives apart from both so that neither imports
the other's command line.
"""

from __future__ import annotations

import sys

from lessons.core.i18n import t
from lessons.core.local_server import ensure_server, server_status, stop_server


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.core.local_server_cli start|stop|status|prepare` (prepare: start only if the local model is active)."""
    args = argv if argv is not None else sys.argv[1:]
    command = args[0] if args else "status"
    if command == "prepare":
        from lessons.core.models import active_model_info

        info = active_model_info()
        print(info.banner())
        if info.provider == "local":
            server = ensure_server()
            print(t("local model server ready at {url} (pid {pid})", url=server.url, pid=server.pid))
    elif command == "start":
        info = ensure_server()
        print(
            t(
                "local model server ready at {url} (model {model}, pid {pid})",
                url=info.url,
                model=info.alias,
                pid=info.pid,
            )
        )
    elif command == "stop":
        print(t("stopped the local model server") if stop_server() else t("no local server was running"))
    elif command == "status":
        print(server_status())
    else:
        print(t("usage: python -m lessons.core.local_server_cli start|stop|status|prepare"), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
