"""The Dask path: the same sweep through a real (in-process) LocalCluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402

from cclab.runner import KERNEL_RESOURCE, Task, dask_submit_options, run_sweep  # noqa: E402
from cclab.sweep import sweep_from_dict  # noqa: E402

distributed = pytest.importorskip("distributed")

BASE = {"name": "dask", "duration": "2s", "link": {"rate": "10Mbps", "buffer": "1bdp"}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}


def test_kernel_runs_hold_a_host_resource():
    t = Task("abc", {}, [])
    assert dask_submit_options(t, "kernel")["resources"] == {KERNEL_RESOURCE: 1}
    assert "resources" not in dask_submit_options(t, "sim")
    assert dask_submit_options(t, "sim")["key"] == "cclab-run-abc"


def test_dask_local_cluster_matches_local_runner(monkeypatch, tmp_path):
    fake_engine.install(monkeypatch)  # in-process workers (processes=False) see the fake
    sw = sweep_from_dict({"base": BASE, "trials": 2, "axes": {"link.buffer": ["1bdp", "2bdp", "3bdp"]}}, ".")
    local = run_sweep(sw, tmp_path / "local", jobs=1, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
        resources={KERNEL_RESOURCE: 1},
    ) as cluster:
        out = run_sweep(sw, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
        assert (out.done, out.failures) == (6, [])
        again = run_sweep(sw, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
        assert (again.skipped, again.done) == (6, 0)
    assert local.done == 6
    a = pd.read_parquet(tmp_path / "local" / "results.parquet")
    b = pd.read_parquet(tmp_path / "dask" / "results.parquet")
    pd.testing.assert_frame_equal(a, b)


REAL = {
    "name": "dask-real",
    "duration": "3s",
    "link": {"rate": "10Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "20ms"}, {"cca": "reno", "rtt": "40ms"}],
}


@pytest.mark.skipif(not __import__("helpers").has_simulate(), reason="cclab._native has no simulate() yet")
def test_dask_path_on_the_real_engine_gives_the_local_records(tmp_path):
    sw = sweep_from_dict({"base": REAL, "axes": {"link.buffer": ["0.5bdp", "2bdp"]}}, ".")
    run_sweep(sw, tmp_path / "local", jobs=1, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl:
        out = run_sweep(sw, tmp_path / "dask", scheduler=cl.scheduler_address, progress=False)
    assert (out.done, out.failures) == (2, [])

    def flows(d):
        return {p.name: (p / "flows.parquet").read_bytes() for p in (d / "runs").iterdir()}

    assert flows(tmp_path / "local") == flows(tmp_path / "dask")


def _write_tls_files(d: Path) -> dict[str, str]:
    """A CA and one certificate signed by it (what docs/sweeps.md makes with openssl), as PEM files."""
    import datetime

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("cclab-ca")).issuer_name(name("cclab-ca"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(minutes=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(name("cclab")).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(2).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(ca_key, hashes.SHA256()))  # fmt: skip
    files = {"ca": d / "ca.pem", "cert": d / "node.pem", "key": d / "node.key"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))  # fmt: skip
    return {k: str(v) for k, v in files.items()}


def test_sweep_through_a_tls_only_scheduler_configured_from_the_environment(monkeypatch, tmp_path):
    """docs/sweeps.md "Never an open port: TLS": a tls:// scheduler with mutual TLS, and the sweep's client
    configured by DASK_DISTRIBUTED__COMM__* environment variables."""
    import dask
    from distributed.security import Security

    fake_engine.install(monkeypatch)
    f = _write_tls_files(tmp_path)
    sec = Security(tls_ca_file=f["ca"], tls_scheduler_cert=f["cert"], tls_scheduler_key=f["key"],
                   tls_worker_cert=f["cert"], tls_worker_key=f["key"], tls_client_cert=f["cert"],
                   tls_client_key=f["key"], require_encryption=True)  # fmt: skip
    env = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True", "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": f["ca"],
           "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": f["cert"], "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": f["key"]}
    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, ".")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                  protocol="tls://", security=sec) as cluster:  # fmt: skip
        assert cluster.scheduler_address.startswith("tls://")
        try:
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            dask.config.refresh()
            out = run_sweep(sw, tmp_path / "tls", scheduler=cluster.scheduler_address, progress=False)
        finally:
            for k in env:
                monkeypatch.delenv(k)
            dask.config.refresh()
    assert (out.done, out.failures) == (2, [])


def test_an_unreachable_scheduler_is_one_line_naming_it_and_writes_nothing(tmp_path):
    # it used to be reported as "--out …: cannot write the sweep directory" after 30 s, with a
    # half-made sweep directory left behind
    import dask

    from cclab.sweep import SweepError

    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, ".")
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        with pytest.raises(SweepError, match=r"^--scheduler tcp://127\.0\.0\.1:1: no Dask scheduler answered"):
            run_sweep(sw, tmp_path / "out", scheduler="tcp://127.0.0.1:1", progress=False)
    assert not (tmp_path / "out").exists()
