"""Output paths of `cclab report`/`plot`, `[[figures]]` names and `cclab reproduce` checks: bad input is
refused with one line naming the option, and nothing already written is lost."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cclab.cli import app

FIX = Path(__file__).parent / "fixtures" / "sweep"


def digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


@pytest.fixture
def sweep(tmp_path) -> Path:
    return Path(shutil.copytree(FIX / "records", tmp_path / "sw"))


@pytest.fixture
def rec(sweep) -> Path:
    return sweep / "runs" / "fixture0000000000000"


def refused(args: list[str], *needles: str) -> str:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    out = r.output.strip()
    assert out.startswith("error: ") and "\n" not in out and "Traceback" not in out, out
    for n in needles:
        assert n in out, out
    return out


@pytest.mark.parametrize("name", ["summary.json", "meta.json", "flows.parquet", "sub/x.html"])
def test_report_into_a_record_is_refused(sweep, rec, name):
    before = digest(sweep)
    refused(["report", str(rec), "-o", str(rec / name)], "--out (-o)", "inside the run record")
    assert digest(sweep) == before


@pytest.mark.parametrize("name", ["points.json", "sweep.toml", "results.parquet", "failures.json", "sweep.lock",
                                  "runs/fixture0000000000000/flows.parquet", "runs/new.html", "corrupt/x.html"])
def test_report_over_sweep_data_is_refused(sweep, name):
    before = digest(sweep)
    refused(["report", str(sweep), "-o", str(sweep / name)], "--out (-o)")
    assert digest(sweep) == before


def test_report_over_other_files_and_dirs(sweep, rec, tmp_path):
    precious = tmp_path / "precious.html"
    precious.write_text("<html>mine</html>")
    refused(["report", str(rec), "-o", str(precious)], "--out (-o)", "not an HTML report cclab wrote")
    assert precious.read_text() == "<html>mine</html>"
    txt = tmp_path / "f.txt"
    txt.write_text("x")
    refused(["report", str(rec), "-o", str(txt)], "--out (-o)")
    refused(["report", str(rec), "-o", str(txt / "x.html")], "--out (-o)", "is not a directory")
    refused(["report", str(rec), "-o", str(tmp_path)], "--out (-o)", "is a directory")
    refused(["report", str(rec), "-o", ""], "--out (-o)", "empty")
    refused(["report", str(rec), "-o", "/"], "--out (-o)")
    refused(["report", str(rec), "-o", "/proc/x.html"], "--out (-o)")
    # a new file is an .html page: not r.txt (it was written as HTML, under a name that said otherwise)
    refused(["report", str(rec), "-o", str(tmp_path / "r.txt")], "--out (-o)", "HTML page", "r.html")
    assert not (tmp_path / "r.txt").exists()


def test_report_replaces_its_own_report(sweep, rec, tmp_path):
    out = tmp_path / "r.html"
    for _ in range(2):
        r = CliRunner().invoke(app, ["report", str(rec), "-o", str(out)])
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["report", str(rec)])  # the default, the record's own report.html
    assert r.exit_code == 0 and (rec / "report.html").exists(), r.output


def test_plot_bad_out(sweep, rec, tmp_path):
    txt = tmp_path / "existing_file.txt"
    txt.write_text("x")
    refused(["plot", str(rec), "-o", str(txt)], "--out (-o)", "not a directory")
    refused(["plot", str(rec), "-o", str(txt / "sub")], "--out (-o)", "not a directory")
    refused(["plot", str(rec), "-o", "/proc/nope"], "--out (-o)")
    refused(["plot", str(rec), "-o", ""], "--out (-o)", "empty")
    assert txt.read_text() == "x"
    before = digest(sweep)
    refused(["plot", str(rec), "-o", str(rec)], "--out (-o)", "inside the run record")
    refused(["plot", str(rec), "-o", str(rec / "sub")], "--out (-o)", "inside the run record")
    refused(["plot", str(sweep), "-o", str(sweep / "runs" / "figs")], "--out (-o)", "runs/")
    assert digest(sweep) == before


@pytest.mark.parametrize("name", ["../../../FIGESCAPE", "/tmp/FIGABS", "", "a/b", "..", "a\\\\b"])
def test_figure_name_must_be_plain(sweep, tmp_path, name):
    toml = sweep / "sweep.toml"
    toml.write_text(toml.read_text() + f'\n[[figures]]\nkind = "jain"\nname = "{name}"\n')
    out = tmp_path / "w" / "fo"
    refused(["plot", str(sweep), "-o", str(out)], "[[figures]] name", "expected a plain file name")
    assert not out.exists() and not list(tmp_path.glob("**/FIG*")) and not Path("/tmp/FIGABS.png").exists()
    refused(["report", str(sweep), "-o", str(tmp_path / "r.html")], "[[figures]] name")


def test_figure_name_checked_at_sweep_load(tmp_path):
    from cclab.sweep import SweepError, load_sweep

    shutil.copytree(FIX / "loss", tmp_path / "loss")
    (tmp_path / "base.toml").write_text((FIX / "records" / "runs" / "fixture0000000000000" /
                                         "scenario.toml").read_text())
    f = tmp_path / "s.toml"
    f.write_text('base = "base.toml"\n[axes]\n"link.buffer" = ["1bdp"]\n[[figures]]\nkind = "jain"\n'
                 'name = "../x"\n')
    with pytest.raises(SweepError, match=r"\[\[figures\]\] name '\.\./x'"):
        load_sweep(f)


def test_reproduce_checks_backend_and_name_first(tmp_path):
    from cclab import presets

    name = next(iter(presets.PRESETS))
    out = tmp_path / "rp"
    refused(["reproduce", name, "--backend", "bogus", "-o", str(out)], "--backend", "'bogus'", "sim")
    assert not out.exists()
    refused(["reproduce", "nosuch", "--list"], "no preset 'nosuch'")
    refused(["reproduce", "nosuch"], "no preset 'nosuch'")


def test_plot_into_a_records_own_figures(rec):
    r = CliRunner().invoke(app, ["plot", str(rec), "-k", "jain", "-o", str(rec / "figures")])
    assert r.exit_code == 0, r.output


# ---------------------------------------------------------------- figure parameters of the wrong type


@pytest.mark.parametrize("kind, params, needle", [
    ("line", {"y": 5}, "y = 5 is not a string"),
    ("line", {"hue": 5}, "hue = 5 is not a string or a list of strings"),
    ("line", {"logx": "no"}, "logx = 'no' is not true or false"),
    ("line", {"title": 5}, "title = 5 is not a string"),
    ("line", {"band": "bogus"}, "band = 'bogus'; expected one of auto, trials, samples, none"),
    ("heatmap", {"gain": "yes"}, "gain = 'yes' is not a table"),
    ("jain", {"smooth_s": "1s"}, "smooth_s = '1s' is not a number"),
    ("jain", {"smooth_s": -1.0}, "smooth_s = -1.0; expected a number of seconds > 0"),
    ("period", {"min_period_s": -5.0}, "min_period_s = -5.0; expected a number of seconds > 0"),
])  # fmt: skip
def test_a_figure_parameter_of_the_wrong_type_is_one_line(kind, params, needle):
    from cclab.figures import FigureError, check_params, REGISTRY

    with pytest.raises(FigureError, match=re.escape(needle)):
        check_params(kind, REGISTRY[kind].draw, params)
    check_params("line", REGISTRY["line"].draw, {"y": "agg.jain", "hue": ["a", "b"], "logx": True, "band": "none"})
    check_params("jain", REGISTRY["jain"].draw, {"smooth_s": 2, "trial": 0})


def test_plot_that_skips_a_figure_asked_for_does_not_exit_0(tmp_path):
    from typer.testing import CliRunner

    from cclab.cli import app

    rec = tmp_path / "A"
    shutil.copytree(Path(__file__).parent / "fixtures" / "run-bbr-cubic", rec)
    r = CliRunner().invoke(app, ["plot", str(rec), "-k", "jain", "-k", "line", "-o", str(tmp_path / "figs")])
    assert r.exit_code == 1, r.output
    assert "skipped figure" in r.output and "needs a sweep directory" in r.output
    assert sorted(p.name for p in (tmp_path / "figs").iterdir())  # jain was drawn all the same
    ok = CliRunner().invoke(app, ["plot", str(rec), "-k", "jain", "-o", str(tmp_path / "figs2")])
    assert ok.exit_code == 0, ok.output


def test_a_records_report_and_figures_take_only_its_own(tmp_path):
    # `report A --out B/report.html` and `plot A --out B/figures` used to put A's output into record B

    a, b = tmp_path / "a", tmp_path / "b"
    fixture = Path(__file__).parent / "fixtures" / "run-bbr-cubic"
    shutil.copytree(fixture, a)
    shutil.copytree(fixture, b)
    refused(["report", str(a), "-o", str(b / "report.html")], "--out (-o)", "is the report.html of the run record")
    refused(["plot", str(a), "-o", str(b / "figures")], "--out (-o)", "is the figures/ of the run record")
    assert not (b / "report.html").exists() and not (b / "figures").exists()
    ok = CliRunner().invoke(app, ["report", str(a), "-o", str(a / "report.html")])
    assert ok.exit_code == 0, ok.output
