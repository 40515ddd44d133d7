"""The one name for an API object as the sandbox holds it: decoded JSON, a dict of any values."""

from __future__ import annotations

from typing import Any

JsonObj = dict[str, Any]
