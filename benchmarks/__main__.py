"""Run every benchmark script in this folder, in order; each writes benchmarks/results/<name>.json."""

import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
for script in sorted(here.glob("bench_*.py")):
    print(f"\n=== {script.name} ===", flush=True)
    sys.argv = [str(script)]
    runpy.run_path(str(script), run_name="__main__")
