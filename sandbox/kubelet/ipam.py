"""Pod IPs from a private /24 per node. They are only labels for `kubectl get -owide`; never dialled."""

from __future__ import annotations

from typing import Final

FIRST_HOST: Final = 2
LAST_HOST: Final = 254


class PodIpExhausted(RuntimeError):
    pass


class PodIpAllocator:
    """Hands out ``10.244.<subnet>.2`` .. ``.254`` per pod UID, reusing released addresses last."""

    def __init__(self, subnet: int, prefix: str = "10.244") -> None:
        if not 0 <= subnet <= 255:
            raise ValueError(f"subnet index must be 0..255, not {subnet}")
        self._base = f"{prefix}.{subnet}."
        self._by_uid: dict[str, str] = {}
        self._next = FIRST_HOST

    def allocate(self, uid: str) -> str:
        if uid in self._by_uid:
            return self._by_uid[uid]
        taken = set(self._by_uid.values())
        for step in range(LAST_HOST - FIRST_HOST + 1):
            host = FIRST_HOST + (self._next - FIRST_HOST + step) % (LAST_HOST - FIRST_HOST + 1)
            address = f"{self._base}{host}"
            if address not in taken:
                self._by_uid[uid] = address
                self._next = host + 1
                return address
        raise PodIpExhausted(f"no free pod IP left in {self._base}0/24")

    def release(self, uid: str) -> None:
        self._by_uid.pop(uid, None)
