"""Notebook 08's checks pass on the course's own answers (service.client) and fail on blanks and near misses."""

import time
from pathlib import Path

from checks.nb08 import check_upload_new, check_wait_for_job
from service.client import ServiceClient, sha256_of_file, wait_for_jobs


def course_wait_for_job(client, job_id, timeout=60.0, every=0.5):
    return wait_for_jobs(client.job, [job_id], timeout=timeout, every=every)[job_id]


def test_the_wait_for_job_check():
    assert check_wait_for_job(course_wait_for_job)
    assert not check_wait_for_job(lambda client, job_id, timeout=60.0, every=0.5: None)

    def never_sleeps(client, job_id, timeout=60.0, every=0.5):
        return course_wait_for_job(client, job_id, timeout, every=0)

    def waits_for_done_only(client, job_id, timeout=60.0, every=0.5):
        deadline = time.monotonic() + timeout
        while (job := client.job(job_id)).status != "done":
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is still {job.status}")
            time.sleep(every)
        return job

    def vague_timeout(client, job_id, timeout=60.0, every=0.5):
        try:
            return course_wait_for_job(client, job_id, timeout, every)
        except TimeoutError:
            raise TimeoutError("timed out") from None

    def returns_at_the_deadline(client, job_id, timeout=60.0, every=0.5):
        try:
            return course_wait_for_job(client, job_id, timeout, every)
        except TimeoutError:
            return client.job(job_id)

    for near_miss in (never_sleeps, waits_for_done_only, vague_timeout, returns_at_the_deadline):
        assert not check_wait_for_job(near_miss), near_miss.__name__


def test_the_upload_new_check():
    assert check_upload_new(lambda client, paths: ServiceClient.upload_new(client, paths, progress=False))
    assert not check_upload_new(lambda client, paths: None)

    def uploads_everything(client, paths):
        return {Path(p).name: client.upload_file(p) for p in paths}

    def by_name_only(client, paths):
        held = {d["name"] for d in client.documents()}
        return {Path(p).name: None if Path(p).name in held else client.upload_file(p) for p in paths}

    def skips_failed_documents(client, paths):
        held = {d["name"]: d["sha256"] for d in client.documents()}
        return {Path(p).name: None if Path(p).name in held and held[Path(p).name] in (None, sha256_of_file(p))
                else client.upload_file(p) for p in paths}  # fmt: skip

    for near_miss in (uploads_everything, by_name_only, skips_failed_documents):
        assert not check_upload_new(near_miss), near_miss.__name__
