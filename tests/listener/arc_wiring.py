"""ARC's listener wired from its config file, for tests: the Actions client, message session,
ARC scaler over a given writer, and capacity gate, without the process around them (the
process wires these in listener/process/app.py)."""

from __future__ import annotations

from collections.abc import Mapping

from listener.arc.config import ListenerConfig
from listener.arc.gate import CapacityGate
from listener.arc.loop_ports import ListenerMetrics
from listener.arc.message_loop import ClosableSession, Listener, run_open_session
from listener.arc.scaler import Scaler, ScalerWriter
from providers.actions.client import ActionsClient
from providers.actions.session import MessageSession


def listener_from_config(
    config: ListenerConfig,
    writer: ScalerWriter,
    *,
    metrics: ListenerMetrics | None = None,
    cut_on_drop: bool = True,
    cut_on_rise: bool = False,
    debounce: float = 0.25,
    initial_capacity: int | None = None,
    owner_name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[MessageSession, Listener]:
    """Wire ARC's listener from its config file: Actions client (PAT or App, extra root CA,
    proxy variables), message session, ARC scaler over ``writer``, capacity gate. Run it with
    ``await serve(session, listener)``; ``listener.gate`` is the reconciler's CapacitySink."""
    client = ActionsClient(
        config.github_config(env),
        config.credentials(),
        scale_set_id=config.runner_scale_set_id,
        root_ca=config.server_root_ca,
    )
    session = MessageSession(client, owner_name=owner_name)
    scaler = Scaler(
        writer,
        namespace=config.ephemeral_runner_set_namespace,
        name=config.ephemeral_runner_set_name,
        min_runners=config.min_runners,
        max_runners=config.max_runners,
    )
    gate = CapacityGate(
        config.max_runners,
        initial=initial_capacity,
        cut_on_drop=cut_on_drop,
        cut_on_rise=cut_on_rise,
        debounce=debounce,
    )
    return session, Listener(session, scaler, gate, metrics)


async def serve(session: ClosableSession, listener: Listener) -> None:
    """Open the session, run the listener, always delete the session on the way out."""
    await session.open()
    await run_open_session(session, listener)
