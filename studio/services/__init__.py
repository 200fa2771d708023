"""Studio's use cases, the only front door: pages, the API, the admin, websockets and
commands call these, never the run engine or the ORM directly for anything that spans
rows, a transaction or the core. One module per subject."""

from studio.services.agents import (
    AGENT_FORMAT,
    create_agent,
    delete_agent,
    export_agent,
    import_agent,
    save_agent_spec,
    update_agent,
)
from studio.services.approvals import decide_approval
from studio.services.model_configs import (
    ConnectionCheck,
    check_model_connection,
    delete_model_config,
)
from studio.services.sessions import (
    FORMAT_VERSION,
    SESSION_FORMAT,
    cancel_active_run,
    cancel_run,
    delete_session,
    export_session,
    session_status,
    start_run,
    start_session,
)

__all__ = [
    "AGENT_FORMAT",
    "FORMAT_VERSION",
    "SESSION_FORMAT",
    "ConnectionCheck",
    "cancel_active_run",
    "cancel_run",
    "check_model_connection",
    "create_agent",
    "decide_approval",
    "delete_agent",
    "delete_model_config",
    "delete_session",
    "export_agent",
    "export_session",
    "import_agent",
    "save_agent_spec",
    "session_status",
    "start_run",
    "start_session",
    "update_agent",
]
