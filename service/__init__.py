"""The course as a service (notebook 08): an upload API, a background ingestion worker, a live index and a nightly evaluation."""
