"""Run record: round trip, completeness marker, atomic replace, overwrite protection."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import needs_engine

from cclab import metrics, record


@pytest.fixture
def parts(raw_ir):
    raw, ir = raw_ir
    flows, link = metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir)
    return dict(
        scenario_toml='name = "synthetic"\n',
        ir=ir,
        meta={"backend": "sim", "engine_version": "synthetic", "seed": 1, "ir_hash": "abc"},
        flows=flows,
        link=link,
        summary=metrics.summary(flows, link, ir),
    )


def test_round_trip(tmp_path, parts):
    out = record.write_run(tmp_path / "run", **parts)
    assert sorted(p.name for p in out.iterdir()) == sorted([*record.FILES, record.MANIFEST])
    assert record.is_complete(out)
    run = record.read_run(out)
    pd.testing.assert_frame_equal(run.flows, parts["flows"], check_dtype=False)
    pd.testing.assert_frame_equal(run.link, parts["link"], check_dtype=False)
    assert run.summary == json.loads(json.dumps(parts["summary"]))
    assert run.ir == parts["ir"]
    assert run.meta["status"] == "complete"
    assert run.meta["record_version"] == record.RECORD_VERSION
    assert run.meta["valid"] is True and run.meta["invalid_reasons"] == []
    assert run.scenario_toml == parts["scenario_toml"]
    md = pq.read_metadata(out / "flows.parquet")
    assert md.metadata[b"cclab.record_version"] == str(record.RECORD_VERSION).encode()
    assert md.row_group(0).column(0).compression == "ZSTD"
    assert "synthetic" in repr(run) and "cubic" in repr(run)
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temp dir left


def test_a_kernel_record_with_a_large_meta_is_complete_and_resumable(tmp_path, parts):
    """Regression: a kernel run the host stalled writes the emulator's lateness histograms (up to
    100 001 one-µs buckets per direction) into meta.json; one of 1.36 MB (38 432 + 5 422 buckets)
    was taken for an incomplete record, so resuming `cclab parity` failed on it with "directory
    exists, is not empty and is not a run"."""
    buckets = [[(i + 1) * 1000, 1] for i in range(100_001)]
    meta = {**parts["meta"], "backend": "kernel",
            "emulator": {"lateness_hist_ns_data": buckets, "lateness_hist_ns_ack": buckets}}
    out = record.write_run(tmp_path / "run", **{**parts, "meta": meta})
    assert (out / "meta.json").stat().st_size > 4 << 20
    assert record.is_complete(out)
    assert record.verify(out) is None
    assert len(record.read_run(out).meta["emulator"]["lateness_hist_ns_data"]) == 100_001
    # an existing complete record is reported as such, never as foreign data
    with pytest.raises(record.RecordExistsError, match="complete run record"):
        record.write_run(tmp_path / "run", **{**parts, "meta": meta})


def test_leftover_temp_dir_is_never_complete(tmp_path, parts):
    out = record.write_run(tmp_path / "run", **parts)
    # a crash after writing the data but before meta.json: copy without meta
    partial = tmp_path / "run2.tmp-x1y2"
    partial.mkdir()
    for f in record.FILES:
        if f != "meta.json":
            (partial / f).write_bytes((out / f).read_bytes())
    assert not record.is_complete(partial)
    with pytest.raises(record.RecordError, match="not a complete run record"):
        record.read_run(partial)
    # meta present but not marked complete
    (partial / "meta.json").write_text(json.dumps({"status": "writing"}))
    assert not record.is_complete(partial)
    (partial / "meta.json").write_text("{truncated")
    assert not record.is_complete(partial)


def test_failure_mid_write_leaves_nothing(tmp_path, monkeypatch, parts):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(record, "_write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        record.write_run(tmp_path / "run", **parts)
    assert list(tmp_path.iterdir()) == []


def test_overwrite_protection_and_atomic_replace(tmp_path, parts):
    out = record.write_run(tmp_path / "run", **parts)
    with pytest.raises(record.RecordExistsError, match="already exists"):
        record.write_run(out, **parts)
    assert record.read_run(out).meta["seed"] == 1  # untouched
    parts["meta"] = {**parts["meta"], "seed": 7}
    record.write_run(out, **parts, overwrite=True)
    assert record.read_run(out).meta["seed"] == 7
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # old record and temp dir removed


def test_refuses_foreign_directory_but_accepts_empty_one(tmp_path, parts):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious")
    with pytest.raises(record.RecordExistsError, match="not a run record"):
        record.write_run(foreign, **parts)
    assert (foreign / "notes.txt").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert record.is_complete(record.write_run(empty, **parts))


def test_read_missing(tmp_path):
    with pytest.raises(record.RecordError, match="no such run directory"):
        record.read_run(tmp_path / "nope")


@needs_engine
def test_lazy_flows_never_come_from_another_record(tmp_path):
    # flows.parquet is read on first use; a record replaced or removed since read_run used to lend
    # the new run's rows to the old run's summary and link (or raise a raw FileNotFoundError)
    import shutil

    import cclab

    def scenario(cca):
        return {"name": "lazy", "duration": "1s", "link": {"rate": "10Mbps", "buffer": "1bdp"},
                "flows": [{"cca": cca, "rtt": "20ms"}]}

    out = tmp_path / "r"
    cclab.run(scenario("cubic"), out=out, plot=False)
    first = record.read_run(out)
    assert set(first.flows["cca"]) == {"cubic"}  # read now: fine
    early = record.read_run(out)
    cclab.run(scenario("reno"), out=out, plot=False, overwrite=True)
    with pytest.raises(record.RecordError, match=r"flows\.parquet changed since the record was loaded"):
        early.flows
    gone = record.read_run(out)
    shutil.rmtree(out)
    with pytest.raises(record.RecordError, match=r"flows\.parquet cannot be read any more"):
        gone.flows
