"""Checks for notebook 08 (from notebook to service). Every hint has its Chinese twin (`zh=`)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from checks import CheckResult, expect, run_check


class _ScriptedJobs:
    """A stand-in for `service.client.ServiceClient`: each `job(id)` call returns the next scripted state."""

    def __init__(self, states: list[str], error: str | None = None):
        self.states, self.error, self.calls = states, error, []

    def job(self, job_id: int):
        from service.client import Job

        self.calls.append(time.monotonic())
        status = self.states[min(len(self.calls) - 1, len(self.states) - 1)]
        return Job(job_id=job_id, document_id="d1", status=status, file_name="handbook.docx",
                   error=self.error if status == "failed" else None)  # fmt: skip


def check_wait_for_job(wait_for_job) -> CheckResult:
    """Exercise 1: poll one job until it is in a final state; a timeout raises TimeoutError naming the job and its state."""

    def check():
        from service.client import Job

        client = _ScriptedJobs(["pending", "running", "running", "done"])
        job = wait_for_job(client, 7, timeout=5, every=0.01)
        expect(
            isinstance(job, Job),
            f"return the last Job the client gave (client.job(job_id)), not {type(job).__name__}",
            zh=f"返回客户端最后给出的 Job（client.job(job_id)），而不是 {type(job).__name__}",
        )
        expect(
            job.status == "done" and len(client.calls) == 4,
            "poll until the status is final (done, failed, superseded, cancelled: job.final), then stop asking",
            zh="一直轮询到状态成为终态（done、failed、superseded、cancelled：job.final），然后停止询问",
        )

        client = _ScriptedJobs(["pending", "failed"], error="CorruptFile: broken")
        job = wait_for_job(client, 8, timeout=5, every=0.01)
        expect(
            job is not None and job.status == "failed" and len(client.calls) == 2,
            "a failed job is finished too: return it (its error says why) instead of waiting for it to succeed",
            zh="失败的作业也已结束：把它返回（它的 error 说明原因），不要一直等它成功",
        )

        client = _ScriptedJobs(["running"])
        started = time.monotonic()
        try:
            wait_for_job(client, 9, timeout=0.3, every=0.05)
        except TimeoutError as error:
            message = str(error)
            expect(
                "9" in message and "running" in message,
                f"the timeout's message names the job and the state it is stuck in (got {message!r})",
                zh=f"超时的消息要写出作业编号和它停在的状态（得到的是 {message!r}）",
            )
        else:
            expect(
                False,
                "a job that never finishes must end in TimeoutError after `timeout` seconds, not return or loop",
                zh="永远不结束的作业必须在 `timeout` 秒后抛出 TimeoutError，而不是返回或一直循环",
            )
        took = time.monotonic() - started
        expect(
            took < 1.5,
            f"stop at the deadline: a 0.3 s timeout took {took:.1f} s",
            zh=f"到了截止时间就停：0.3 秒的超时用了 {took:.1f} 秒",
        )
        expect(
            len(client.calls) <= 12,
            f"sleep `every` seconds between two polls (time.sleep): {len(client.calls)} requests in 0.3 s hammer the service",
            zh=f"两次轮询之间睡 `every` 秒（time.sleep）：0.3 秒内 {len(client.calls)} 次请求会压垮服务",
        )
        expect(took >= 0.25, "wait the whole `timeout` before giving up", zh="放弃之前要等满整个 `timeout`")

    return run_check("Exercise 1 (wait for a job)", check, zh="练习 1（等待作业完成）")


class _Documents:
    """A stand-in for the client's documents() and upload_file(): what is held, and what was uploaded."""

    def __init__(self, held: dict[str, str | None]):
        self.held, self.uploaded = held, []

    def documents(self, include_deleted: bool = False):
        return [{"document_id": f"d{n}", "name": name, "sha256": digest, "state": "indexed" if digest else "failed"}
                for n, (name, digest) in enumerate(self.held.items())]  # fmt: skip

    def upload_file(self, path):
        from service.client import Upload

        path = Path(path)
        self.uploaded.append(path.name)
        return Upload(document_id=f"new-{path.name}", job_id=len(self.uploaded), name=path.name, status="pending")

    def upload(self, name, content):
        raise AssertionError("use client.upload_file(path)")


def check_upload_new(upload_new) -> CheckResult:
    """Exercise 2: upload only the files the service does not hold with the same bytes (running it twice queues nothing)."""

    def check():
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            files = {}
            for name, text in [("same.md", "# Same\n\nunchanged"), ("changed.md", "# Changed\n\nnew text"),
                               ("new.md", "# New\n\nnever uploaded"), ("failed.md", "# Failed\n\nits job failed")]:  # fmt: skip
                (folder / name).write_text(text, encoding="utf-8")
                files[name] = folder / name
            digest = hashlib.sha256(files["same.md"].read_bytes()).hexdigest()
            client = _Documents(
                {"same.md": digest, "changed.md": hashlib.sha256(b"old text").hexdigest(), "failed.md": None}
            )
            try:
                result = upload_new(client, list(files.values()))
            except AssertionError as error:
                expect(False, str(error), zh="用 client.upload_file(path) 上传")
            expect(
                isinstance(result, dict) and set(result) == set(files),
                "return a dict with one entry per file name (path.name)",
                zh="返回一个字典，每个文件名（path.name）一项",
            )
            expect(
                "same.md" not in client.uploaded and result["same.md"] is None,
                "a file the service holds with the same bytes (the document's sha256 equals the file's) is skipped: None",
                zh="服务里已有、字节相同的文件（文档的 sha256 等于文件的 sha256）要跳过：值为 None",
            )
            expect(
                "new.md" in client.uploaded and result["new.md"] is not None,
                "a file the service does not hold is uploaded (client.upload_file(path)); keep its Upload",
                zh="服务里没有的文件要上传（client.upload_file(path)），并保留它的 Upload",
            )
            expect(
                "changed.md" in client.uploaded,
                "compare the bytes, not only the name: a changed file with a known name is a new version — upload it",
                zh="比较字节，而不只是文件名：同名但内容变了的文件是新版本，要上传",
            )
            expect(
                "failed.md" in client.uploaded,
                "a document without a sha256 was never indexed (its job failed): upload it again",
                zh="没有 sha256 的文档从未被索引（它的作业失败了）：要重新上传",
            )
            expect(client.uploaded.count("new.md") == 1, "upload each file once", zh="每个文件只上传一次")

    return run_check("Exercise 2 (upload only what is new)", check, zh="练习 2（只上传新的文件）")
