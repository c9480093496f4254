"""The action's image: build time, size, and how long `evalgate --version` takes to start in it.

    eval "$(bash .ci/containers /tmp/evalgate-containers)"   # podman + the local base image
    python bench/bench_container.py [--cold] [--runs 7]

Start time is compared side by side with the floor every container start pays on this
machine: the same image running `python3 -c pass` (podman + the interpreter, no evalgate).
The ratio says what evalgate's own imports add. `--cold` rebuilds every layer (`--no-cache`),
which downloads the locked dependencies again. Sizes are podman's (uncompressed layers).
The base image here is a debootstrap stand-in for python:3.12-slim (../shared/notes/
containers.md); the official one is smaller, so the absolute size is an overestimate.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = "docker.io/library/python:3.12-slim"
TAG = "evalgate:bench"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def run(cmd: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds, done.stdout


def size_mb(image: str) -> float:
    _, out = run(["podman", "image", "inspect", "--format", "{{.Size}}", image])
    return int(out.strip()) / 1e6


def start_times(entrypoint: str, args: list[str], runs: int) -> list[float]:
    cmd = ["podman", "run", "--rm", "--network=none", "--entrypoint", entrypoint, TAG, *args]
    run(cmd)  # warm the page cache and podman's own state
    return [run(cmd)[0] for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="rebuild every layer (--no-cache)")
    parser.add_argument("--runs", type=int, default=7, help="container starts per command (default 7)")
    args = parser.parse_args()

    build = ["podman", "build", "--pull=never", "-t", TAG]
    if CA_BUNDLE.is_file():
        build += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
    if args.cold:
        build.append("--no-cache")
    build_s, _ = run(build + [str(REPO)])
    _, version = run(["podman", "run", "--rm", "--network=none", "--entrypoint", "evalgate", TAG, "--version"])

    floor = start_times("python3", ["-c", "pass"], args.runs)
    ours = start_times("evalgate", ["--version"], args.runs)
    image, base = size_mb(TAG), size_mb(BASE)

    print(f"{version.strip()} in {TAG}")
    print(f"build ({'cold, --no-cache' if args.cold else 'layers cached'}): {build_s:.1f} s")
    print(f"image: {image:.0f} MB, of which the base image {base:.0f} MB and evalgate's layers {image - base:.0f} MB")
    print(f"| container start ({args.runs} runs) | median s | min s |")
    print("|---|--:|--:|")
    print(f"| python3 -c pass (floor) | {statistics.median(floor):.3f} | {min(floor):.3f} |")
    print(f"| evalgate --version | {statistics.median(ours):.3f} | {min(ours):.3f} |")
    print(f"evalgate --version / floor: {statistics.median(ours) / statistics.median(floor):.2f}x (medians)")


if __name__ == "__main__":
    main()
