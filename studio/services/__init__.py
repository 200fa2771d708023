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
from studio.services.bundles import export_bundle, import_bundle
from studio.services.mcp_serving import (
    Answer,
    ask_agent,
    create_token,
    published_agents,
    revoke_token,
    user_for_token,
)
from studio.services.memories import add_memory, edit_memory
from studio.services.model_configs import (
    PRICE_FIELDS,
    ConnectionCheck,
    check_model_connection,
    create_model_config,
    delete_model_config,
)
from studio.services.prompts import delete_template, preview_template, save_template
from studio.services.replays import replay_run
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
    show_calls_in_flight,
    start_run,
    start_session,
)
from studio.services.skills import delete_skill, upload_skill_folder, upload_skill_zip

__all__ = [
    "AGENT_FORMAT",
    "FORMAT_VERSION",
    "PRICE_FIELDS",
    "SESSION_FORMAT",
    "SESSION_FORMAT_VERSION",
    "Answer",
    "ConnectionCheck",
    "add_memory",
    "answer_question",
    "ask_agent",
    "cancel_active_run",
    "cancel_run",
    "check_model_connection",
    "create_agent",
    "create_model_config",
    "create_token",
    "decide",
    "decide_approval",
    "decide_many",
    "delete_agent",
    "delete_model_config",
    "delete_session",
    "delete_skill",
    "delete_template",
    "edit_memory",
    "export_agent",
    "export_bundle",
    "export_session",
    "import_agent",
    "import_bundle",
    "pause_active_run",
    "pause_run",
    "preview_template",
    "published_agents",
    "replay_run",
    "resume_active_run",
    "resume_interrupted_run",
    "resume_run",
    "revoke_token",
    "save_agent_spec",
    "save_template",
    "session_status",
    "set_user_budget",
    "show_calls_in_flight",
    "start_run",
    "start_session",
    "update_agent",
    "upload_skill_folder",
    "upload_skill_zip",
    "user_budget",
    "user_for_token",
]
