"""`--help` shows every help string as written; `cclab algorithms` and docs/algorithms.md list every parameter.

Before: help was rich markup, so `cclab sweep --help` said "TOML: base, trials, , " — `[axes]` and
`[zip]` vanished as markup tags, as did every "[default: …]" not escaped by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from cclab import cca_params
from cclab.cli import algorithms_markdown, app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def commands():
    group = typer.main.get_command(app)
    return sorted(group.commands.items())


def test_sweep_help_shows_bracketed_text():
    result = runner.invoke(app, ["sweep", "--help"])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "Sweep file (TOML: base, trials, [axes], [zip])." in text
    assert "[default: sweeps/<file stem>]" in text and "Apply the file's [quick] overrides." in text


@pytest.mark.parametrize(("name", "command"), commands(), ids=[n for n, _ in commands()])
def test_every_help_string_appears_as_written(name, command):
    result = runner.invoke(app, [name, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    doc = flat((command.help or "").split("\n\n")[0])
    assert doc in text, (name, doc)
    for param in command.params:
        helptext = getattr(param, "help", None)
        if helptext:
            assert flat(helptext) in text, (name, param.name, helptext)
    # a repeatable option names what it takes (`--kind KIND`), not typer's Python type (`<list[str]>`);
    # the usage line names a repeatable argument once (`[NAME]...`, not `[[NAME]...]...`)
    options = result.output.split("Options:", 1)[1]
    assert "<list" not in options and "list[" not in options, (name, options)
    assert "]...]" not in result.output.splitlines()[0] + result.output.splitlines()[1], (name, result.output)


def test_top_level_help_and_version():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    text = flat(result.output)
    for name, _command in commands():
        assert name in text
    assert "--version" in text and "--install-completion" in text and "--show-completion" in text
    import cclab

    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.strip() == f"cclab {cclab.__version__}"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_script(shell):
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    proc = subprocess.run([sys.executable, "-m", "cclab", "--show-completion", shell], capture_output=True, text=True,
                          env=env, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "_CCLAB_COMPLETE" in proc.stdout.upper() or "cclab" in proc.stdout


def test_completion_completes_commands():
    """What a shell gets back when it asks (the protocol the installed script speaks)."""
    env = {**os.environ, "_CCLAB_COMPLETE": "complete_bash", "COMP_WORDS": "cclab sw", "COMP_CWORD": "1"}
    proc = subprocess.run([sys.executable, "-c", "from cclab.cli import app; app(prog_name='cclab')"],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert "sweep" in proc.stdout.split(), (proc.stdout, proc.stderr)


# ---------------------------------------------------------------- algorithms


def test_algorithms_lists_every_parameter_with_default_range_and_source():
    result = runner.invoke(app, ["algorithms"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = result.output
    for name, params in cca_params.PARAMS.items():
        assert f"{name} — {cca_params.SOURCES[name]}" in text
        block = text.split(f"{name} — ", 1)[1].split("\n\n", 1)[0]
        for row in cca_params.describe(name):
            param, allowed, meaning, default, source = row
            assert param in block and allowed in block and default in block and source in block, (name, param)
        assert set(params) <= set(block.split())


def test_algorithms_json_and_unknown_name():
    import json

    result = runner.invoke(app, ["algorithms", "cubic", "--json"])
    doc = json.loads(result.output)
    beta = next(p for p in doc["cubic"]["parameters"] if p["name"] == "beta")
    assert beta["default"] == 717 / 1024 and beta["allowed"] == "a multiple of 1/1024 in [1/1024, 1023/1024]"
    bad = runner.invoke(app, ["algorithms", "bbrr"])
    assert bad.exit_code == 2 and "'bbrr' is not a known congestion control algorithm" in bad.output


def test_docs_algorithms_md_is_generated_from_the_registry():
    """docs/algorithms.md must be `cclab algorithms --markdown` (regenerate it after changing cca_params)."""
    doc = (REPO / "docs" / "algorithms.md").read_text()
    assert doc == algorithms_markdown() + "\n" or doc == algorithms_markdown(), (
        "docs/algorithms.md is out of date: run `cclab algorithms --markdown > docs/algorithms.md`")
    for name, params in cca_params.PARAMS.items():
        section = doc.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        for param in params:
            assert f"| `{param}` |" in section, (name, param)
