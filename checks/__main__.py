"""`python -m checks NOTEBOOK [NOTEBOOK …]`: run notebooks and report their exercise checks.

Runs each notebook top to bottom with its small test sizes (fast) and prints every check's result.
Exit code 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse

from tools.notebook_runner import execute_notebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the exercises of course notebooks.")
    parser.add_argument("notebooks", nargs="+", help="e.g. notebooks/00_setup.ipynb")
    parser.add_argument("--full", action="store_true", help="run at full size instead of the quick test sizes")
    args = parser.parse_args(argv)
    all_passed = True
    for path in args.notebooks:
        run = execute_notebook(path, quick=not args.full)
        print(f"\n{path}")
        if not run.passed:
            print(f"  the notebook stopped with an error before the end:\n{run.error}")
        if not run.checks:
            print("  no exercise checks ran")
        for check in run.checks:
            mark = "✅" if check["passed"] else "❌"
            print(f"  {mark} {check['exercise']}" + ("" if check["passed"] else f" — {check['message']}"))
        all_passed &= run.passed and bool(run.checks) and all(c["passed"] for c in run.checks)
    return 0 if all_passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
