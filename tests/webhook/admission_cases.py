"""Loading the AdmissionReview fixtures of ``tests/fixtures/admissionreviews`` (one case per file).

Each file holds ``review`` (what the API server sends), ``tfjobs`` (what the webhook's cache holds),
optional ``settings`` (gang scheduler, cluster domain) and ``expected``: ``allowed``, the denial
``status``, the decoded JSON ``patch`` (null for none) and ``warnings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfjob.settings import Settings
from webhook.review import decode_patch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "admissionreviews"


@dataclass(frozen=True)
class AdmissionCase:
    name: str
    endpoint: str
    review: dict[str, Any]
    tfjobs: list[dict[str, Any]]
    settings: Settings
    expected: dict[str, Any]

    def expected_envelope(self) -> dict[str, Any]:
        """The whole response envelope, with the patch decoded (see ``decoded_envelope``)."""
        response: dict[str, Any] = {"uid": self.review["request"]["uid"], "allowed": self.expected["allowed"]}
        if "status" in self.expected:
            response["status"] = self.expected["status"]
        if self.expected["patch"] is not None:
            response["patchType"] = "JSONPatch"
            response["patch"] = self.expected["patch"]
        if self.expected["warnings"]:
            response["warnings"] = self.expected["warnings"]
        return {"apiVersion": self.review["apiVersion"], "kind": "AdmissionReview", "response": response}


def decoded_envelope(envelope: dict[str, Any]) -> dict[str, Any]:
    """``envelope`` with its base64 patch replaced by the decoded operations."""
    decoded: dict[str, Any] = json.loads(json.dumps(envelope))
    response = decoded.get("response") or {}
    if "patch" in response:
        response["patch"] = decode_patch(response["patch"])
    return decoded


def load_cases(prefix: str = "") -> list[AdmissionCase]:
    cases = []
    for path in sorted(FIXTURES.glob(f"{prefix}*.json")):
        document = json.loads(path.read_text())
        cases.append(
            AdmissionCase(
                name=path.stem,
                endpoint=document["endpoint"],
                review=document["review"],
                tfjobs=document["tfjobs"],
                settings=Settings(**document.get("settings", {})),
                expected=document["expected"],
            )
        )
    return cases


def json_paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (keys and list indexes), the document's own included."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += json_paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += json_paths(value, (*prefix, index))
    return found
