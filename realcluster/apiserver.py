"""A real kube-apiserver for tests and benchmarks, in the layout of controller-runtime's envtest.

etcd, kube-apiserver and kube-controller-manager (garbage collector, namespace and node-lifecycle
controllers only: no kubelet, no scheduler) run as child processes on loopback ports, with a
fresh etcd data directory. The binaries come from ``scripts/kube-apiserver`` (built from Debian's
source package, kept in a cache outside the work tree).

- ``start_real_apiserver(options)``: a context manager yielding a ``RealApiServer`` that is
  stopped on exit (kube-controller-manager, then kube-apiserver, then etcd).
- ``RealApiServer`` answers what tests ask of the sandbox's ``ApiServerHandle``: ``kubeconfig``,
  ``add_user``, ``request_log`` (read from kube-apiserver's audit log), ``expire_watches``,
  ``install_crd_file``/``apply_file``, plus ``restart_apiserver`` on the same etcd.
- ``python -m realcluster.apiserver --bin-dir DIR`` runs one in the foreground until Ctrl-C
  (``scripts/kube-apiserver run``), printing where its admin kubeconfig is.

Identities: the admin is a static token in ``system:masters``; every other user gets an X.509
client certificate from the server's own CA (kube-apiserver reads its token file only at start,
but accepts any certificate its client CA signed). kube-apiserver authorizes with RBAC; unless
``authorize`` is set, every authenticated user is bound to ``cluster-admin``, which is what the
sandbox's default of not authorizing amounts to.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import json
import logging
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import CLOCK_SKEW, CertificateAuthority, new_ca
from certs.pem import certificate_pem, new_private_key, private_key_pem
from certs.serving import issue_serving_certificate
from realcluster.crds import VOLCANO_CRD_FILES, tfjob_crd_path
from realcluster.kubeconfig import write_kubeconfig
from realcluster.kubectl import find_kubectl
from realcluster.ports import free_port
from realcluster.requestrecord import RequestRecord

logger = logging.getLogger(__name__)

__all__ = [
    "BIN_DIR_ENV",
    "RealApiServer",
    "RealApiServerError",
    "RealApiServerOptions",
    "built_folder",
    "find_bin_dir",
    "run_in_foreground",
    "start_real_apiserver",
]

BIN_DIR_ENV = "TFGANG_KUBE_BIN_DIR"
"""A directory holding etcd, kube-apiserver and kube-controller-manager; skips the build script."""
BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "kube-apiserver"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
ADMIN_USER = "admin"
# The controllers the tests need, by the names each release knows them by (v1.28 renamed them
# *-controller); resourcequota keeps each ResourceQuota's usage, without which its admission
# refuses everything.
CONTROLLERS = "garbagecollector,namespace,nodelifecycle,resourcequota"
CONTROLLERS_SINCE_1_28 = (
    "garbage-collector-controller,namespace-controller,node-lifecycle-controller,resourcequota-controller"
)
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}
BARRIER_PREFIX = "tfgang-audit-barrier-"
EVERYONE_IS_ADMIN = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "tfgang-test-authenticated-are-admins"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}],
}


class RealApiServerError(RuntimeError):
    """The binaries are missing or a component did not start."""


def built_folder(env: str, script: Path) -> Path:
    """The folder ``$env`` names, else the one ``script build`` builds or reuses and prints last."""
    explicit = os.environ.get(env)
    if explicit:
        return Path(explicit)
    if not script.exists():
        raise RealApiServerError(f"set {env}: no {script} to build with")
    built = subprocess.run(["bash", str(script), "build"], capture_output=True, check=False)
    if built.returncode != 0:
        tail = built.stderr.decode(errors="replace")[-3000:]
        raise RealApiServerError(f"scripts/{script.name} failed with code {built.returncode}:\n{tail}")
    return Path(built.stdout.decode().strip().splitlines()[-1])


def find_bin_dir() -> Path:
    """``$TFGANG_KUBE_BIN_DIR``, else what ``scripts/kube-apiserver`` builds or reuses."""
    directory = built_folder(BIN_DIR_ENV, BUILD_SCRIPT)
    missing = [name for name in BINARIES if not os.access(directory / name, os.X_OK)]
    if missing:
        raise RealApiServerError(f"{directory} lacks {', '.join(missing)}")
    return directory


def kube_release(bin_dir: Path) -> tuple[int, int]:
    """The (major, minor) release of the kube-apiserver in ``bin_dir``, from its ``--version``."""
    done = subprocess.run(
        [str(bin_dir / "kube-apiserver"), "--version"], capture_output=True, check=False, timeout=30
    )
    text = done.stdout.decode(errors="replace").strip()
    match = re.search(r"v(\d+)\.(\d+)", text)
    if done.returncode != 0 or match is None:
        raise RealApiServerError(f"{bin_dir / 'kube-apiserver'} --version gave no release: {text!r}")
    return int(match.group(1)), int(match.group(2))


def client_certificate(ca: CertificateAuthority, user: str, groups: Sequence[str]) -> tuple[bytes, bytes]:
    """kube-apiserver's X.509 identity: the common name is the user, each organization a group."""
    now = datetime.datetime.now(datetime.UTC)
    key = new_private_key()
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, user)]
        + [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.private_key, hashes.SHA256())
    )
    return certificate_pem(certificate), private_key_pem(key)


def write_service_account_keys(pki: Path) -> dict[str, Path]:
    """The key pair service-account tokens are signed with: ``sa-key`` (kube-apiserver signs,
    kube-controller-manager's token controller too) and ``sa-pub`` (kube-apiserver verifies)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return {
        "sa-key": write_private_file(pki / "sa.key", private),
        "sa-pub": write_private_file(pki / "sa.pub", public),
    }


def write_private_file(path: Path, content: bytes | str, mode: int = 0o600) -> Path:
    data = content.encode() if isinstance(content, str) else content
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return path


def _audit_record(event: dict[str, Any]) -> RequestRecord:
    ref = event.get("objectRef") or {}
    return RequestRecord(
        verb=str(event.get("verb", "")),
        group=str(ref.get("apiGroup", "")),
        version=str(ref.get("apiVersion", "")),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        user=str((event.get("user") or {}).get("username", "")),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
    )


@dataclass(frozen=True)
class RealApiServerOptions:
    bin_dir: Path | None = None
    """Where the binaries are; ``find_bin_dir()`` when not given."""
    workdir: Path | None = None
    """Certificates, etcd data, kubeconfigs, logs; a temporary directory when not given."""
    port: int = 0
    """kube-apiserver's HTTPS port on 127.0.0.1; 0 picks a free one."""
    authorize: bool = False
    """Enforce RBAC for every user; otherwise every authenticated user is a cluster admin."""
    install_volcano_crds: bool = True
    install_tfjob_crd: bool = True
    controller_manager: bool = True
    startup_timeout: float = 60.0


@dataclass
class ChildProcess:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    env: dict[str, str] | None = None
    """The child's environment; this process's when not given."""

    def start(self) -> None:
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 60.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (kube-apiserver waits for open watches)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(grace)
                except subprocess.TimeoutExpired:
                    logger.warning("%s did not exit within %.0fs of SIGTERM; killing it", self.name, grace)
                    self.process.kill()
                    self.process.wait()
            self.process = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stop()


@dataclass
class RealApiServer:
    """etcd + kube-apiserver + kube-controller-manager; see the module docstring."""

    options: RealApiServerOptions = field(default_factory=RealApiServerOptions)
    workdir: Path = field(init=False, default=Path())
    url: str = field(init=False, default="")
    ca_pem: bytes = field(init=False, default=b"")
    token: str = field(init=False, default="")
    kubeconfig: str = field(init=False, default="")
    etcd_url: str = field(init=False, default="")
    release: tuple[int, int] = field(init=False, default=(0, 0))
    """kube-apiserver's (major, minor), known once started."""

    def __post_init__(self) -> None:
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._ca: CertificateAuthority | None = None
        self._children: dict[str, ChildProcess] = {}
        self._audit_offset = 0
        self._kubectl = find_kubectl()

    @classmethod
    def attached(
        cls, *, url: str, kubeconfig: str, ca: CertificateAuthority, token: str, workdir: Path
    ) -> RealApiServer:
        """A kube-apiserver started by someone else (the one-node cluster's), configured as this
        class configures its own (``token`` in ``system:masters``, client certificates from
        ``ca``, the audit log in ``workdir/logs``): what tests ask of an API server, no process
        of its own to stop."""
        server = cls(RealApiServerOptions(workdir=workdir))
        server.url, server.kubeconfig, server.workdir, server.token = url, kubeconfig, workdir, token
        server._ca, server.ca_pem = ca, ca.cert_pem
        return server

    @property
    def admin_token(self) -> str:
        return self.token

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def audit_log(self) -> Path:
        return self.log_dir / "audit.log"

    # -- start and stop ---------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        options = self.options
        bin_dir = options.bin_dir or find_bin_dir()
        if options.workdir is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="tfgang-kube-apiserver-")
            self.workdir = Path(self._scratch.name)
        else:
            self.workdir = options.workdir
        pki = self.workdir / "pki"
        for directory in (pki, self.log_dir, self.workdir / "etcd"):
            directory.mkdir(parents=True, exist_ok=True)

        self.release = kube_release(bin_dir)
        self._ca = new_ca("tfgang-kube-apiserver-ca")
        self.ca_pem = self._ca.cert_pem
        serving = issue_serving_certificate(self._ca, ["localhost"], ip_addresses=["127.0.0.1"])
        self.token = secrets.token_hex(16)
        files = {
            **write_service_account_keys(pki),
            "ca": write_private_file(pki / "ca.crt", self.ca_pem),
            "cert": write_private_file(pki / "apiserver.crt", serving.cert_pem),
            "key": write_private_file(pki / "apiserver.key", serving.key_pem),
            "tokens": write_private_file(
                pki / "tokens.csv", f"{self.token},{ADMIN_USER},admin-uid,system:masters\n"
            ),
            "audit-policy": write_private_file(
                self.workdir / "audit-policy.yaml", yaml.safe_dump(AUDIT_POLICY)
            ),
        }

        etcd_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        port = options.port or free_port()
        self.url = f"https://127.0.0.1:{port}"
        self._children["etcd"] = ChildProcess("etcd", [
            str(bin_dir / "etcd"), "--data-dir", str(self.workdir / "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync",
        ], self.log_dir / "etcd.log")  # fmt: skip
        self._children["kube-apiserver"] = ChildProcess("kube-apiserver", [
            str(bin_dir / "kube-apiserver"),
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={pki}", f"--tls-cert-file={files['cert']}",
            f"--tls-private-key-file={files['key']}", f"--client-ca-file={files['ca']}",
            f"--token-auth-file={files['tokens']}", "--authorization-mode=RBAC",
            f"--service-account-issuer={self.url}", f"--service-account-key-file={files['sa-pub']}",
            f"--service-account-signing-key-file={files['sa-key']}",
            "--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true", "--endpoint-reconciler-type=none",
            f"--audit-policy-file={files['audit-policy']}", f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json", "--audit-log-mode=blocking",
            # Before v1.24 an HTTP port without authentication is open unless turned off.
            *(["--insecure-port=0"] if self.release < (1, 24) else []),
        ], self.log_dir / "kube-apiserver.log")  # fmt: skip
        self._children["kube-controller-manager"] = ChildProcess("kube-controller-manager", [
            str(bin_dir / "kube-controller-manager"),
            f"--kubeconfig={self.workdir / 'admin.kubeconfig'}", "--leader-elect=false",
            f"--controllers={CONTROLLERS if self.release < (1, 28) else CONTROLLERS_SINCE_1_28}",
            f"--service-account-private-key-file={files['sa-key']}", "--secure-port=0",
            *(["--port=0"] if self.release < (1, 24) else []),
            # Nodes whose agent stopped answering are noticed quickly in tests.
            "--node-monitor-period=2s",
        ], self.log_dir / "kube-controller-manager.log")  # fmt: skip

        deadline = time.monotonic() + options.startup_timeout
        self._children["etcd"].start()
        self._wait(deadline, "etcd", lambda: self._http_ok(f"{self.etcd_url}/health", None))
        self._start_apiserver(deadline)
        self.kubeconfig = write_kubeconfig(
            str(self.workdir / "admin.kubeconfig"), self.url, self.ca_pem, self.token, user=ADMIN_USER
        )
        if not options.authorize:
            self.apply_object(EVERYONE_IS_ADMIN)
        if options.install_volcano_crds:
            for path in VOLCANO_CRD_FILES:
                self.install_crd_file(path)
        crd = tfjob_crd_path()
        if options.install_tfjob_crd and crd:
            self.install_crd_file(crd)
        if options.controller_manager:
            self._children["kube-controller-manager"].start()
        logger.info("kube-apiserver ready at %s (logs in %s)", self.url, self.log_dir)

    def _start_apiserver(self, deadline: float) -> None:
        self._children["kube-apiserver"].start()
        self._wait(deadline, "kube-apiserver", lambda: self._http_ok(f"{self.url}/readyz", self.token))

    def stop(self) -> None:
        """kube-controller-manager, then kube-apiserver, then etcd; removes a temporary workdir."""
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            child = self._children.get(name)
            if child is not None:
                child.stop()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def restart_apiserver(self, *, kill: bool = False, grace: float = 60.0) -> None:
        """Stop kube-apiserver (SIGTERM, or SIGKILL with ``kill``) and start it again on the same
        port and etcd. Every open watch ends; a watch resumed from before the restart gets 410
        Gone, since the new server's watch cache starts at etcd's current revision."""
        child = self._children["kube-apiserver"]
        if kill:
            child.kill()
        else:
            child.stop(grace)
        self._start_apiserver(time.monotonic() + self.options.startup_timeout)

    def expire_watches(self) -> None:
        """End every open watch so that each watcher's resourceVersion is too old (410 Gone):
        etcd's history is compacted (what kube-apiserver serves without its watch cache, Events
        say, is watched in etcd directly) and kube-apiserver restarted (its watch cache then
        starts at etcd's current revision)."""
        self.compact_etcd()
        self.restart_apiserver(kill=True)

    def compact_etcd(self) -> int:
        """Compact etcd's history through its JSON gateway, up to a revision newer than any
        watcher's: a watch resumes after its resourceVersion, so one at the last revision before
        the compaction would still be served. A key of our own makes that newer revision."""
        bump = {"key": base64.b64encode(b"/tfgang-compaction").decode(), "value": ""}
        revision = int(self._etcd_call("/v3/kv/put", bump)["header"]["revision"])
        self._etcd_call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def _etcd_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.etcd_url}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result

    def check(self) -> None:
        for name, child in self._children.items():
            if child.process is not None and not child.alive():
                code = child.process.returncode
                raise RealApiServerError(f"{name} exited with {code}; see {child.log_path}")

    def _wait(self, deadline: float, what: str, ready: Any) -> None:
        child = self._children[what]
        while not ready():
            if not child.alive():
                tail = child.log_path.read_text(errors="replace")[-3000:]
                raise RealApiServerError(f"{what} exited before it was ready; {child.log_path}:\n{tail}")
            if time.monotonic() > deadline:
                raise RealApiServerError(f"{what} not ready in time; see {child.log_path}")
            time.sleep(0.1)

    def _http_ok(self, url: str, token: str | None) -> bool:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
        context = ssl.create_default_context(cadata=self.ca_pem.decode()) if url.startswith("https") else None
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                return bool(answer.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    # -- what tests ask of an API server ---------------------------------------------------------

    def add_user(
        self, user: str, groups: tuple[str, ...] = ("system:authenticated",), path: Path | None = None
    ) -> tuple[str, str]:
        """A new identity with a client certificate: ("", its kubeconfig's path; ``path`` or one
        in the workdir). The empty string stands for the token the sandbox would give."""
        if self._ca is None:
            raise RealApiServerError("the server has not been started")
        # kube-apiserver adds system:authenticated itself.
        cert, key = client_certificate(self._ca, user, [g for g in groups if g != "system:authenticated"])
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        written = write_kubeconfig(
            str(path or self.workdir / f"{safe}.kubeconfig"), self.url, self.ca_pem, "", user=safe,
            client_cert=(cert, key),
        )  # fmt: skip
        return "", written

    def request_log(self) -> list[RequestRecord]:
        """Every API call since the last ``clear_request_log``, oldest first, from the audit log
        (a watch is recorded when its stream opens, any other call when it has completed)."""
        marker = self._audit_barrier()
        records = []
        seen_marker = False
        with self.audit_log.open("rb") as log:
            log.seek(self._audit_offset)
            for line in log:
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    name = str((event.get("objectRef") or {}).get("name", ""))
                    if name.startswith(BARRIER_PREFIX):
                        seen_marker = seen_marker or name == marker
                        continue
                    long_running = event.get("verb") == "watch"
                    if event.get("stage") == ("ResponseStarted" if long_running else "ResponseComplete"):
                        records.append(_audit_record(event))
        if not seen_marker:
            raise RealApiServerError("the audit log lost its own marker request")
        return records

    def clear_request_log(self) -> None:
        self._audit_barrier()
        self._audit_offset = self.audit_log.stat().st_size

    def _audit_barrier(self) -> str:
        """A request of our own, waited for in the audit log: a client gets its answer a moment
        before kube-apiserver writes the call's audit event, so calls answered before the
        barrier's are then in the log too."""
        marker = f"{BARRIER_PREFIX}{uuid.uuid4().hex[:12]}"
        self._http_ok(f"{self.url}/api/v1/namespaces/default/configmaps/{marker}", self.token)
        needle = marker.encode()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.audit_log.open("rb") as log:
                log.seek(self._audit_offset)
                if needle in log.read():
                    return marker
            time.sleep(0.01)
        raise RealApiServerError(f"the audit event of {marker} never came")

    def install_crd_file(self, path: str) -> None:
        """Create or replace the CRD(s) in a YAML file and wait until they are served."""
        self.apply_file(path)
        self.run_kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", path)

    def apply_file(self, path: str) -> None:
        """Create or replace every object in a YAML file, as the admin. Not ``kubectl apply``:
        the client-side kind stores the whole object in an annotation, too big for large CRDs,
        and v1.20's server-side apply refuses fields it does not know (CEL rules in a CRD),
        which create and replace drop as kube-apiserver decodes them."""
        self._create_or_replace(["-f", path], None)

    def apply_object(self, obj: dict[str, Any]) -> None:
        self._create_or_replace(["-f", "-"], yaml.safe_dump(obj))

    def _create_or_replace(self, source: list[str], stdin: str | None) -> None:
        try:
            self.run_kubectl("create", "--validate=false", *source, stdin=stdin)
        except RealApiServerError as error:
            if "AlreadyExists" not in str(error):
                raise
            self.run_kubectl("replace", "--validate=false", *source, stdin=stdin)

    def run_kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [self._kubectl, "--kubeconfig", self.kubeconfig, *args],
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            timeout=90,
            check=False,
        )
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace")
            raise RealApiServerError(f"kubectl {' '.join(args)} failed: {error}")
        return done.stdout.decode()


@contextlib.contextmanager
def start_real_apiserver(options: RealApiServerOptions = RealApiServerOptions()) -> Iterator[RealApiServer]:
    server = RealApiServer(options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Running(Protocol):
    """What ``run_in_foreground`` shows and watches: a ``RealApiServer`` or a one-node cluster."""

    @property
    def url(self) -> str: ...
    @property
    def kubeconfig(self) -> str: ...
    @property
    def log_dir(self) -> Path: ...
    def check(self) -> None: ...


def run_in_foreground(
    started: contextlib.AbstractContextManager[Running], copy_to: Path | None, what: str = "kube-apiserver"
) -> int:
    """Run a started server until SIGTERM or Ctrl-C, printing where its kubeconfig and logs are;
    1 when it did not start or one of its components died, 130 when stopped while starting (what
    had started is stopped again)."""
    stop = False
    running = False

    def request_stop(*_: object) -> None:
        nonlocal stop
        stop = True
        if not running:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        with started as server:
            running = True
            if copy_to:
                shutil.copyfile(server.kubeconfig, copy_to)
            print(f"{what} at {server.url}; kubeconfig {copy_to or server.kubeconfig}", flush=True)
            print(f"logs in {server.log_dir}; Ctrl-C stops it", flush=True)
            while not stop:
                server.check()
                time.sleep(0.5)
    except RealApiServerError as error:
        print(f"{what} did not run: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{what}: stopped while starting", file=sys.stderr)
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m realcluster.apiserver", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--bin-dir", type=Path, help=f"the binaries (default: ${BIN_DIR_ENV} or the build)")
    parser.add_argument("--workdir", type=Path, help="keep certificates, etcd data and logs here")
    parser.add_argument("--port", type=int, default=0, help="kube-apiserver's port (default: a free one)")
    parser.add_argument("--kubeconfig", type=Path, help="also copy the admin kubeconfig here")
    parser.add_argument("--authorize", action="store_true", help="enforce RBAC for every user")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    options = RealApiServerOptions(
        bin_dir=args.bin_dir, workdir=args.workdir, port=args.port, authorize=args.authorize
    )
    return run_in_foreground(start_real_apiserver(options), args.kubeconfig)


if __name__ == "__main__":
    sys.exit(main())
