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
from studio.services.approvals import answer_question, decide, decide_approval, decide_many
from studio.services.budgets import set_user_budget, user_budget
from studio.services.memories import add_memory, edit_memory
from studio.services.model_configs import (
    PRICE_FIELDS,
    ConnectionCheck,
    check_model_connection,
    create_model_config,
    delete_model_config,
)
from studio.services.prompts import delete_template, preview_template, save_template
from studio.services.sessions import (
    FORMAT_VERSION,
    SESSION_FORMAT,
    SESSION_FORMAT_VERSION,
    cancel_active_run,
    cancel_run,
    delete_session,
    export_session,
    pause_active_run,
    pause_run,
    resume_active_run,
    resume_interrupted_run,
    resume_run,
    session_status,
    start_run,
    start_session,
)

__all__ = [
    "AGENT_FORMAT",
    "FORMAT_VERSION",
    "PRICE_FIELDS",
    "SESSION_FORMAT",
    "SESSION_FORMAT_VERSION",
    "ConnectionCheck",
    "add_memory",
    "answer_question",
    "cancel_active_run",
    "cancel_run",
    "check_model_connection",
    "create_agent",
    "create_model_config",
    "decide",
    "decide_approval",
    "decide_many",
    "delete_agent",
    "delete_model_config",
    "delete_session",
    "delete_template",
    "edit_memory",
    "export_agent",
    "export_session",
    "import_agent",
    "pause_active_run",
    "pause_run",
    "preview_template",
    "resume_active_run",
    "resume_interrupted_run",
    "resume_run",
    "save_agent_spec",
    "save_template",
    "session_status",
    "set_user_budget",
    "start_run",
    "start_session",
    "update_agent",
    "user_budget",
]
