"""Shared fixtures: the command-line binary (to compare numbers with) and small models."""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli_exe():
    """The `dsgd` binary: `$DSGD_CLI` when set, else the release build of this checkout (built
    here with cargo if needed; CI has built it already)."""
    exe = os.environ.get("DSGD_CLI")
    if not exe:
        subprocess.run(
            ["cargo", "build", "--release", "--quiet", "--bin", "dsgd"],
            cwd=REPO,
            check=True,
        )
        target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        exe = str(target / "release" / "dsgd")
    return exe


@pytest.fixture(scope="session")
def cli(cli_exe):
    """A function running the `dsgd` command line and returning its parsed JSON output."""
    exe = cli_exe

    def run(*args):
        out = subprocess.run(
            [exe, *map(str, args)], capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout)

    return run


def without_seconds(x):
    """A report with every `seconds` field removed (the only machine-dependent numbers)."""
    if isinstance(x, dict):
        return {k: without_seconds(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, list):
        return [without_seconds(v) for v in x]
    return x
