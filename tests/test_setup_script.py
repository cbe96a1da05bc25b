"""scripts/setup.sh installs Debian's packages for the dev tests through one function, `debian_package`: as root with
apt-get, one `apt-get update` a run and one install a package; otherwise a message naming what is skipped and the
command that installs it. Run here with a stand-in apt-get on PATH (nothing is installed) and `id` shadowed."""

import re
import subprocess

from lessons.core.settings import PROJECT_ROOT

SETUP = PROJECT_ROOT / "scripts" / "setup.sh"


def run_debian_package(tmp_path, calls: str, uid: int, apt_exit: int = 0) -> subprocess.CompletedProcess:
    """`debian_package` as scripts/setup.sh defines it, called as the script calls it (`calls`: shell lines)."""
    function = re.search(r"^debian_package\(\) \{.*?^\}$", SETUP.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    assert function, "scripts/setup.sh defines no debian_package function"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "apt.log"}\nexit {apt_exit}\n')
    fake.chmod(0o755)
    script = f"set -euo pipefail\nid() {{ echo {uid}; }}\n{function.group()}\n{calls}\n"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True, env=env, timeout=30)


def apt_calls(tmp_path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_as_root_it_updates_once_and_installs_each_package(tmp_path):
    run = run_debian_package(tmp_path, 'debian_package chromium "the browser test" "tests/test_browser.py"\n'
                             'debian_package postgresql "the service tests" "the PostgreSQL service tests"', uid=0)  # fmt: skip
    assert run.returncode == 0, run.stderr
    calls = apt_calls(tmp_path)
    assert calls == ["update -qq", "install -y -qq --no-install-recommends chromium",
                     "install -y -qq --no-install-recommends postgresql"], calls  # fmt: skip
    assert "Installing Debian's postgresql for the service tests" in run.stdout


def test_a_failed_install_names_what_is_skipped_and_setup_goes_on(tmp_path):
    run = run_debian_package(tmp_path, 'debian_package chromium "the browser test" "tests/test_browser.py"\necho on',
                             uid=0, apt_exit=100)  # fmt: skip
    assert run.returncode == 0 and run.stdout.endswith("on\n"), run.stderr
    assert "Could not install chromium with apt-get: tests/test_browser.py will be skipped." in run.stderr


def test_without_root_it_installs_nothing_and_says_how(tmp_path):
    run = run_debian_package(tmp_path, 'debian_package postgresql "the service tests" "the PostgreSQL service tests"',
                             uid=1000)  # fmt: skip
    assert run.returncode == 0 and apt_calls(tmp_path) == []
    assert (
        "the PostgreSQL service tests will be skipped. Install it with: sudo apt-get install postgresql" in run.stderr
    )
