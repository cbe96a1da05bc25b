"""Command line: `python -m service api | worker | nightly`.

python -m service api                 # the API on 127.0.0.1:8008, with one ingestion worker thread inside
python -m service api --workers 0     # the API only (then run workers: needs a Chroma server)
python -m service worker              # a separate ingestion worker (needs AGENTIC_RAG_CHROMA_URL)
python -m service nightly             # generate questions for new documents, evaluate, report the trend
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading


def _api(args) -> int:
    import uvicorn

    from service.api import create_app
    from service.core import Service

    service = Service()
    host = args.host or service.settings.host
    port = args.port or service.settings.port
    workers = service.settings.workers if args.workers is None else args.workers
    app = create_app(service, workers=workers)
    print(
        f"service on http://{host}:{port} — stores: {service.settings.describe()}; {workers} worker thread(s)",
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level=args.log_level, access_log=args.access_log)
    return 0


def _worker(args) -> int:
    from service.core import Service
    from service.worker import Worker

    service = Service()
    if service.settings.chroma_url is None:
        print("error: a separate worker needs a Chroma server — the embedded index can be written by one process only, "
              "and the API process holds it. Either run `python -m service api` (its worker threads do the work), or "
              "start `chroma run --host 127.0.0.1 --port 8000 --path ./chroma-data` and set "
              "AGENTIC_RAG_CHROMA_URL=http://127.0.0.1:8000 for the API and the workers.", file=sys.stderr)  # fmt: skip
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker = Worker(service)
    print(f"worker {worker.name} — stores: {service.settings.describe()}", flush=True)
    done = worker.run(stop, max_jobs=args.max_jobs)
    print(f"worker {worker.name} stopped after {done} job(s)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service", description="The course as a service (notebook 08).")
    sub = parser.add_subparsers(dest="command", required=True)
    api = sub.add_parser("api", help="run the HTTP API (and its worker threads)")
    api.add_argument("--host", default=None, help="default: AGENTIC_RAG_SERVICE_HOST or 127.0.0.1")
    api.add_argument("--port", type=int, default=None, help="default: AGENTIC_RAG_SERVICE_PORT or 8008")
    api.add_argument("--workers", type=int, default=None, help="ingestion worker threads in the API process")
    api.add_argument("--log-level", default="info")
    api.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=True)
    worker = sub.add_parser("worker", help="run a separate ingestion worker (needs a Chroma server)")
    worker.add_argument("--max-jobs", type=int, default=None, help="stop after N jobs")
    sub.add_parser("nightly", help="the nightly evaluation (see python -m service.nightly --help)", add_help=False)
    args, rest = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.command == "nightly":
        from service.nightly import main as nightly_main

        return nightly_main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from lessons.core.settings import SettingsError

    try:
        return _api(args) if args.command == "api" else _worker(args)
    except SettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
