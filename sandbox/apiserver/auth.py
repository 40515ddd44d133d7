"""Bearer tokens -> users. Tokens can be added at runtime so each component gets its own identity."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field


@dataclass(frozen=True)
class UserInfo:
    username: str
    groups: tuple[str, ...] = ("system:authenticated",)
    uid: str = ""

    def wire(self) -> dict[str, object]:
        body: dict[str, object] = {"username": self.username, "groups": list(self.groups)}
        if self.uid:
            body["uid"] = self.uid
        return body


ADMIN_USER = "sandbox-admin"
ADMIN_GROUPS = ("system:masters", "system:authenticated")


@dataclass
class TokenAuthenticator:
    _users: dict[str, UserInfo] = field(default_factory=dict)

    def add(self, username: str, groups: tuple[str, ...] = ("system:authenticated",), token: str = "") -> str:
        chosen = token or secrets.token_urlsafe(24)
        self._users[chosen] = UserInfo(username, groups, uid=secrets.token_hex(8))
        return chosen

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self._users.get(token.strip())
