"""Where the API server is and how to authenticate to it: a kubeconfig file or the pod's service account.

Public API:

- ``Endpoint`` -- frozen: ``server`` (URL without a trailing slash), ``ca_pem`` (None: the system's
  trust store), ``insecure``, ``tls_server_name``, ``proxy_url``, ``client_cert``/``client_key``
  (PEM), ``token``, ``token_file``, ``basic_auth`` ((user, password)), ``exec_plugin``.
- ``ExecPlugin`` -- frozen: a kubeconfig ``user.exec`` stanza (client-go's credential plugin).
- ``load_kubeconfig(path, context=None) -> Endpoint`` -- the context given, else the current one.
- ``load_in_cluster(environ=os.environ, account_dir=SERVICE_ACCOUNT_DIR) -> Endpoint``.
- ``context_namespace(path, context=None) -> str`` -- the context's namespace ("" if it sets none),
  as kubectl reads it.

Both raise ``kube.errors.ConfigError`` with a readable message. What client-go reads is read:
relative file paths are relative to the kubeconfig's directory, ``*-data`` fields are base64 and
win over their file twins, a ``token`` wins over a ``tokenFile``. ``auth-provider`` (deprecated by
client-go in favour of exec plugins) is refused with a message that says so. Reading files is
blocking: call these from a thread in async code.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import yaml

from kube.errors import ConfigError

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Endpoint",
    "ExecPlugin",
    "context_namespace",
    "load_in_cluster",
    "load_kubeconfig",
]

_T = TypeVar("_T")

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class ExecPlugin:
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1beta1"
    install_hint: str = ""
    # Relative commands are looked up like client-go does: on PATH, or beside the kubeconfig when
    # the name contains a slash.
    base_dir: str = ""


@dataclass(frozen=True)
class Endpoint:
    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    client_cert: bytes | None = None
    client_key: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    basic_auth: tuple[str, str] | None = None
    exec_plugin: ExecPlugin | None = None


def load_kubeconfig(path: str, context: str | None = None) -> Endpoint:
    return _read(path, lambda document: _endpoint(document, context, os.path.dirname(os.path.abspath(path))))


def context_namespace(path: str, context: str | None = None) -> str:
    return _read(path, lambda document: _text(_context(document, context)[1], "namespace"))


def _read(path: str, interpret: Callable[[Any], _T]) -> _T:
    if not os.path.isfile(path):
        raise ConfigError(f"kubeconfig {path!r} does not exist or is not a file")
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        return interpret(document)
    except ConfigError as exc:
        raise ConfigError(f"cannot load kubeconfig {path!r}: {exc}") from None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot load kubeconfig {path!r}: {exc}") from exc


def load_in_cluster(
    environ: Mapping[str, str] | None = None, account_dir: str = SERVICE_ACCOUNT_DIR
) -> Endpoint:
    environ = os.environ if environ is None else environ
    host = environ.get("KUBERNETES_SERVICE_HOST")
    port = environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError(
            "no kubeconfig given and not running in a cluster: "
            "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"
        )
    token_file = os.path.join(account_dir, "token")
    ca_file = os.path.join(account_dir, "ca.crt")
    try:
        with open(token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
        with open(ca_file, "rb") as handle:
            ca_pem = handle.read()
    except OSError as exc:
        raise ConfigError(f"no kubeconfig given and not running in a cluster: {exc}") from exc
    if not token:
        raise ConfigError(f"no kubeconfig given and not running in a cluster: {token_file} is empty")
    if ":" in host:
        host = f"[{host}]"
    # The token is projected and rotated by the kubelet: it is read again from its file.
    return Endpoint(server=f"https://{host}:{port}", ca_pem=ca_pem, token=None, token_file=token_file)


def _named(document: Mapping[str, Any], section: str, name: str) -> Mapping[str, Any]:
    for entry in document.get(section) or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(section[:-1])
            if isinstance(body, Mapping):
                return body
            raise ConfigError(f"{section[:-1]} {name!r} has no {section[:-1]} stanza")
    raise ConfigError(f"{section[:-1]} {name!r} does not exist")


def _context(document: Any, context: str | None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The kubeconfig as a mapping, and the body of the context given (else the current one)."""
    if not isinstance(document, Mapping):
        raise ConfigError("not a kubeconfig (expected a mapping at the top)")
    chosen = context or document.get("current-context")
    if not isinstance(chosen, str) or not chosen:
        raise ConfigError("no context given and no current-context set")
    try:
        return document, _named(document, "contexts", chosen)
    except ConfigError:
        raise ConfigError(f"context {chosen!r} does not exist") from None


def _endpoint(document: Any, context: str | None, base_dir: str) -> Endpoint:
    document, context_body = _context(document, context)
    cluster = _named(document, "clusters", _text(context_body, "cluster", required=True))
    user_name = _text(context_body, "user")
    user = _named(document, "users", user_name) if user_name else {}
    server = _text(cluster, "server", required=True).rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise ConfigError(f"cluster server {server!r} is not an http(s) URL")
    if "auth-provider" in user:
        raise ConfigError("user auth-provider is not supported (client-go deprecated it); use an exec plugin")
    basic_auth = None
    if user.get("username") or user.get("password"):
        basic_auth = (_text(user, "username"), _text(user, "password"))
    return Endpoint(
        server=server,
        ca_pem=_pem(cluster, "certificate-authority", base_dir),
        insecure=cluster.get("insecure-skip-tls-verify") is True,
        tls_server_name=_text(cluster, "tls-server-name") or None,
        proxy_url=_text(cluster, "proxy-url") or None,
        client_cert=_pem(user, "client-certificate", base_dir),
        client_key=_pem(user, "client-key", base_dir),
        token=_text(user, "token") or None,
        token_file=_path(_text(user, "tokenFile"), base_dir) or None,
        basic_auth=basic_auth,
        exec_plugin=_exec_plugin(user.get("exec"), base_dir),
    )


def _text(body: Mapping[str, Any], key: str, *, required: bool = False) -> str:
    value = body.get(key)
    if value is None or value == "":
        if required:
            raise ConfigError(f"{key!r} is missing")
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{key!r} must be a string, got {type(value).__name__}")
    return value


def _path(value: str, base_dir: str) -> str:
    if not value:
        return ""
    return os.path.join(base_dir, os.path.expanduser(value))


def _pem(body: Mapping[str, Any], key: str, base_dir: str) -> bytes | None:
    data = _text(body, f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(f"{key}-data is not base64: {exc}") from exc
    path = _path(_text(body, key), base_dir)
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f"{key} {path!r} cannot be read: {exc.strerror or exc}") from exc


def _exec_plugin(stanza: Any, base_dir: str) -> ExecPlugin | None:
    if stanza is None:
        return None
    if not isinstance(stanza, Mapping):
        raise ConfigError("user exec must be a mapping")
    args = stanza.get("args") or []
    env = stanza.get("env") or []
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ConfigError("exec args must be a list of strings")
    if not isinstance(env, list) or not all(
        isinstance(item, Mapping) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str)
        for item in env
    ):
        raise ConfigError("exec env must be a list of {name, value} strings")
    return ExecPlugin(
        command=_text(stanza, "command", required=True),
        args=tuple(args),
        env=tuple((item["name"], item["value"]) for item in env),
        api_version=_text(stanza, "apiVersion") or ExecPlugin.api_version,
        install_hint=_text(stanza, "installHint"),
        base_dir=base_dir,
    )
