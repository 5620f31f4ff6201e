"""deploy/: the systemd unit and the Kubernetes DaemonSet of the fleet tracer.

The unit: `systemd-analyze verify` (systemd's own checker) where it is installed, plus what the
daemon needs from it, and a real `tracer run` under exactly the unit's capability bounding set,
no-new-privs and umask, on a fresh mount namespace without tracefs: the hardening must still
allow BPF. The manifest: every document against the Kubernetes JSON schemas (strict: unknown
fields are errors) shipped by kubernetes-validate, offline, plus what the daemon needs from it
(privileges, hostPID, the kernel mounts, the spool on a hostPath, its command line).
"""

from __future__ import annotations

import copy
import errno
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from fleet_support import LAYER_PEER, REPO, build_fakeverbs, run_driver, write_fake_set

from tracer.fleet.spool import list_snapshots, read_snapshot

UNIT = REPO / "deploy" / "systemd" / "tracebase-tracer.service"
MANIFEST = REPO / "deploy" / "kubernetes" / "tracebase-tracer.yaml"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"
SPOOL = "/var/spool/tracebase"
KERNEL_MOUNTS = ("/sys/kernel/tracing", "/sys/kernel/debug", "/sys/fs/bpf", "/lib/modules", "/usr/src")


# --------------------------------------------------------------------------------------------
# the systemd unit
# --------------------------------------------------------------------------------------------
def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """systemd's unit syntax: [Section], Key=value, repeated keys accumulate, a trailing
    backslash continues the line, '#'/';' start comments."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line[0] in "#;"):
            continue
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        line, logical = logical + line, ""
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{line!r} outside a section"
        key, sep, value = line.partition("=")
        assert sep, f"not Key=value: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, dict[str, list[str]]]:
    return parse_unit(UNIT.read_text())


def _exec_start(unit) -> list[str]:
    (line,) = unit["Service"]["ExecStart"]
    return shlex.split(line)


def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("SKIP (systemd-analyze): not installed; test_unit_gives_the_daemon_what_it_needs still "
              "checks the unit", file=sys.stderr)
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    # verify checks that the ExecStart binary exists: point it at this checkout's tracer
    # (through a link of a plain name: a checkout path with a space would split the command line)
    tracer = tmp_path / "bin" / "tracer"
    tracer.parent.mkdir()
    tracer.symlink_to(Path(sys.executable).with_name("tracer"))
    text = UNIT.read_text().replace("/opt/tracebase/.venv/bin/tracer", str(tracer))
    copy_ = tmp_path / UNIT.name
    copy_.write_text(text)
    out = subprocess.run([analyze, "verify", str(copy_)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # warnings (unknown keys, bad values) go to stderr with the file name, even with status 0
    assert [line for line in out.stderr.splitlines() if UNIT.name in line] == []


def test_unit_gives_the_daemon_what_it_needs(unit):
    service = unit["Service"]
    argv = _exec_start(unit)
    assert argv[0] == "/opt/tracebase/.venv/bin/tracer" and argv[1] == "run"
    # the command line is one `tracer run` accepts
    from tracer.cli import common

    args = common.build_parser("tracer", "", ["tracer.cli.run"]).parse_args(argv[1:])
    assert Path(args.spool) == Path(SPOOL)
    assert Path(args.prom).parent == Path(TEXTFILE_DIR) and args.prom.endswith(".prom")
    # its outputs: writable through ProtectSystem=strict, created before the sandbox, readable
    assert service["ProtectSystem"] == ["strict"]
    writable = " ".join(service["ReadWritePaths"]).split()
    assert SPOOL in writable and TEXTFILE_DIR in writable
    (pre,) = service["ExecStartPre"]
    assert pre.startswith("+") and SPOOL in pre and TEXTFILE_DIR in pre
    assert service["UMask"] == ["0022"]
    # BPF: root with the capabilities it needs, nothing that hides headers, tracefs or W+X memory
    caps = set(" ".join(service["CapabilityBoundingSet"]).split())
    assert {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"} <= caps and "CAP_NET_ADMIN" not in caps
    assert service.get("User", ["root"]) == ["root"] and service["NoNewPrivileges"] == ["yes"]
    for key in ("ProtectKernelModules", "ProtectKernelTunables", "MemoryDenyWriteExecute", "PrivateUsers",
                "DynamicUser", "PrivateNetwork"):
        assert service.get(key, ["no"]) == ["no"], key
    syscalls = " ".join(service["SystemCallFilter"]).split()
    assert {"bpf", "perf_event_open", "@mount"} <= set(syscalls)
    # stop = final snapshot; reload = capture window
    assert service["KillSignal"] == ["SIGTERM"] and "-USR1" in service["ExecReload"][0]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_the_units_hardening_still_allows_bpf(unit, need_bpf, need_cc, tmp_path):  # noqa: ARG001
    """`tracer run` under the unit's capability bounding set, no-new-privs and umask, in a mount
    namespace without tracefs (the daemon mounts it): attaches, traces, writes readable outputs."""
    for tool in ("setpriv", "unshare"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} (util-linux) is not installed")
    service = unit["Service"]
    caps = " ".join(service["CapabilityBoundingSet"]).split()
    bounding = "-all," + ",".join("+" + c.removeprefix("CAP_").lower() for c in caps)
    lib, driver = build_fakeverbs(tmp_path / "build", need_cc)
    set_file = write_fake_set(tmp_path / "fakeverbs.yaml", lib)
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    umask = int(service["UMask"][0], 8)
    script = textwrap.dedent("""\
        for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
            while umount "$m" 2>/dev/null; do :; done
        done
        exec "$@"
    """)
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "unit",
           "setpriv", "--no-new-privs", f"--bounding-set={bounding}", "--inh-caps=-all",
           sys.executable, "-m", "tracer.cli", "run", str(set_file), "-x", "-i", "60s", "-d", "4s",
           "--spool", str(tmp_path / "spool"), "--prom", str(textfile / "tracebase.prom"), "--host", "n1"]
    old = os.umask(umask)
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
    finally:
        os.umask(old)
    log = []
    for line in proc.stderr:  # wait until the probes are live, then make failures
        log.append(line)
        if "probes live" in line:
            assert run_driver(driver, "reg_mr", 3, LAYER_PEER, errno.EIO) == 3
            break
    log.extend(proc.stderr)
    assert proc.wait(timeout=60) == 0, "".join(log)
    assert "mounted tracefs" in "".join(log)
    (snap,) = list_snapshots(tmp_path / "spool")
    events, _ = read_snapshot(snap)
    assert events["trace_id"].n_unique() == 3
    for path in (snap / "events.parquet", textfile / "tracebase.prom"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path  # node_exporter/ingest can read
    assert stat.S_IMODE(snap.stat().st_mode) == 0o755


# --------------------------------------------------------------------------------------------
# the Kubernetes manifest
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def _validate(doc: dict, version: str) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, version, strict=True)


@pytest.fixture(scope="module")
def k8s_versions() -> list[str]:
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="dev dependency kubernetes-validate")
    # the oldest release we claim (1.28: sidecar-era clusters) and the newest schemas shipped
    return ["1.28.0", kubernetes_validate.utils.latest_version()]


def test_manifest_matches_the_kubernetes_schemas(docs, k8s_versions):
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "DaemonSet"]
    for doc in docs:
        for version in k8s_versions:
            _validate(doc, version)


def test_the_schema_check_has_teeth(docs, k8s_versions):
    import kubernetes_validate

    ds = docs[2]
    broken = copy.deepcopy(ds)
    broken["spec"]["template"]["spec"]["hostPid"] = True  # a typo: silently ignored by a lax check
    missing = copy.deepcopy(ds)
    del missing["spec"]["selector"]
    wrong_type = copy.deepcopy(ds)
    wrong_type["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = "yes"
    for bad in (broken, missing, wrong_type):
        with pytest.raises(kubernetes_validate.ValidationError):
            _validate(bad, k8s_versions[-1])


def test_daemonset_gives_the_tracer_what_it_needs(docs):
    ns, sa, ds = docs
    assert ds["apiVersion"] == "apps/v1" and ds["metadata"]["namespace"] == ns["metadata"]["name"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pod = ds["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    assert pod["hostPID"] is True  # job ids from the traced processes' /proc
    assert any(t.get("operator") == "Exists" and "key" not in t for t in pod["tolerations"])
    (container,) = pod["containers"]
    sc = container["securityContext"]
    caps = set(sc.get("capabilities", {}).get("add", []))
    assert sc.get("privileged") is True or {"BPF", "PERFMON", "SYS_ADMIN"} <= caps
    assert sc.get("runAsUser", 0) == 0
    # the kernel's file systems and headers, at the same paths as on the node
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in (*KERNEL_MOUNTS, SPOOL, TEXTFILE_DIR):
        assert path in mounts, f"no mount at {path}"
        volume = volumes[mounts[path]["name"]]
        assert volume["hostPath"]["path"] == path, path
    for path in ("/lib/modules", "/usr/src"):
        assert mounts[path].get("readOnly") is True
    for path in (SPOOL, TEXTFILE_DIR, "/sys/kernel/tracing"):
        assert not mounts[path].get("readOnly"), f"{path} must be writable"
    assert volumes[mounts[SPOOL]["name"]]["hostPath"]["type"] == "DirectoryOrCreate"
    if sc.get("readOnlyRootFilesystem"):
        assert "/tmp" in mounts  # bcc and Python need a writable /tmp
    # the command line is one `tracer run` accepts, writing where the mounts are
    argv = [*container["command"], *container["args"]]
    assert argv[:2] == ["tracer", "run"]
    env = {e["name"]: e for e in container.get("env", [])}
    argv = [re.sub(r"\$\((\w+)\)", lambda m: "node-7" if m.group(1) in env else m.group(0), a) for a in argv]
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    from tracer.cli import common

    args = common.build_parser("tracer", "", ["tracer.cli.run"]).parse_args(argv[1:])
    assert args.spool == SPOOL and Path(args.prom).parent == Path(TEXTFILE_DIR) and args.host == "node-7"
    # SIGTERM's final snapshot fits in the grace period
    assert pod["terminationGracePeriodSeconds"] >= 10
