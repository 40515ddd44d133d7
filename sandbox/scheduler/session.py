"""A whole scheduling session: the gangs first, then the plain pods on what is left."""

from __future__ import annotations

from sandbox.scheduler.decisions import SessionResult
from sandbox.scheduler.gang import GangConfig, schedule_gangs
from sandbox.scheduler.ledger import Ledger
from sandbox.scheduler.plain import schedule_plain
from sandbox.scheduler.snapshot import Snapshot


def run_session(
    snapshot: Snapshot, now: str, session_id: str, config: GangConfig = GangConfig()
) -> SessionResult:
    """Decide bindings, status writes and events for ``snapshot``; pure, no I/O."""
    ledger = Ledger(snapshot.nodes)
    gangs = schedule_gangs(snapshot, ledger, now, session_id, config)
    plain = schedule_plain(snapshot.plain_tasks, ledger, now)
    return SessionResult(
        binds=gangs.binds + plain.binds,
        pod_conditions=gangs.pod_conditions + plain.pod_conditions,
        podgroup_writes=gangs.podgroup_writes,
        events=gangs.events + plain.events,
        evictions=gangs.evictions,
    )
