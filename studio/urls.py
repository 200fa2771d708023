from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from studio.auth import RateLimitedLoginView, admin_login
from studio.web import (
    approvals,
    bundles,
    compare,
    datasets,
    eval_compare,
    eval_run,
    evals,
    files,
    ingest_tokens,
    mcp_tokens,
    memories,
    metrics,
    otlp,
    overview,
    prompts,
    sessions,
    skills,
    traces,
    views,
)
from studio.web import mcp as views_mcp
from studio.web import remote_agents as views_remote

login_view = RateLimitedLoginView.as_view(
    # The documented local demo account gets a one-click sign-in in development.
    extra_context={"demo_login": settings.DEBUG}
)

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("agents/", views.agent_list, name="agents"),
    path("agents/new/", views.agent_builder, name="agent-new"),
    path("agents/validate/", views.agent_validate, name="agent-validate"),
    path("agents/<uuid:pk>/", views.agent_builder, name="agent-edit"),
    path("agents/<uuid:pk>/duplicate/", views.agent_duplicate, name="agent-duplicate"),
    path("agents/<uuid:pk>/delete/", views.agent_delete, name="agent-delete"),
    path("agents/<uuid:pk>/a2a/", mcp_tokens.a2a_publish, name="a2a-publish"),
    path("models/", views.model_list, name="models"),
    path("models/new/", views.model_edit, name="model-new"),
    path("models/<uuid:pk>/", views.model_edit, name="model-edit"),
    path("models/<uuid:pk>/delete/", views.model_delete, name="model-delete"),
    path("mcp-servers/", views_mcp.mcp_list, name="mcp-servers"),
    path("mcp-servers/new/", views_mcp.mcp_edit, name="mcp-server-new"),
    path("mcp-servers/new/stdio/", views_mcp.mcp_new_stdio, name="mcp-server-new-stdio"),
    path("mcp-servers/<uuid:pk>/", views_mcp.mcp_edit, name="mcp-server-edit"),
    path("mcp-servers/<uuid:pk>/delete/", views_mcp.mcp_delete, name="mcp-server-delete"),
    path("mcp-servers/<uuid:pk>/test/", views_mcp.mcp_test, name="mcp-server-test"),
    path("remote-agents/", views_remote.remote_agent_list, name="remote-agents"),
    path("remote-agents/new/", views_remote.remote_agent_edit, name="remote-agent-new"),
    path("remote-agents/<uuid:pk>/", views_remote.remote_agent_edit, name="remote-agent-edit"),
    path(
        "remote-agents/<uuid:pk>/delete/",
        views_remote.remote_agent_delete,
        name="remote-agent-delete",
    ),
    path("remote-agents/<uuid:pk>/test/", views_remote.remote_agent_test, name="remote-agent-test"),
    path("mcp-tokens/", mcp_tokens.mcp_token_list, name="mcp-tokens"),
    path("mcp-tokens/<uuid:pk>/revoke/", mcp_tokens.mcp_token_revoke, name="mcp-token-revoke"),
    path("settings/trace-ingest/", ingest_tokens.ingest_token_list, name="ingest-tokens"),
    path(
        "settings/trace-ingest/<uuid:pk>/revoke/",
        ingest_tokens.ingest_token_revoke,
        name="ingest-token-revoke",
    ),
    # OTLP/HTTP's standard path, so exporters need only the server's address.
    path("v1/traces", otlp.traces, name="otlp-traces"),
    path("overview/", overview.overview_page, name="overview"),
    path("approvals/", approvals.approval_inbox, name="approvals"),
    path("approvals/decide/", approvals.approval_decide, name="approvals-decide"),
    path("approvals/answer/", approvals.approval_answer, name="approvals-answer"),
    path("memories/", memories.memory_list, name="memories"),
    path("memories/<int:pk>/edit/", memories.memory_edit, name="memory-edit"),
    path("memories/<int:pk>/delete/", memories.memory_delete, name="memory-delete"),
    path("skills/", skills.skill_list, name="skills"),
    path("skills/<str:name>/", skills.skill_detail, name="skill"),
    path("skills/<str:name>/delete/", skills.skill_delete, name="skill-delete"),
    path("templates/", prompts.template_list, name="prompt-templates"),
    path("templates/new/", prompts.template_edit, name="prompt-template-new"),
    path("templates/<str:name>/", prompts.template_edit, name="prompt-template"),
    path("templates/<str:name>/delete/", prompts.template_delete, name="prompt-template-delete"),
    path("datasets/", datasets.dataset_list, name="datasets"),
    path("datasets/new/", datasets.dataset_create, name="dataset-create"),
    path("datasets/import/", datasets.dataset_import, name="dataset-import"),
    path("datasets/<uuid:pk>/", datasets.dataset_detail, name="dataset"),
    path("datasets/<uuid:pk>/cases/add/", datasets.case_add, name="dataset-case-add"),
    path("datasets/<uuid:pk>/cases/delete/", datasets.case_delete, name="dataset-case-delete"),
    path("datasets/<uuid:pk>/delete/", datasets.dataset_delete, name="dataset-delete"),
    path("playground/", sessions.playground, name="playground"),
    path("sessions/", sessions.session_list, name="sessions"),
    path("sessions/import/", bundles.bundle_import, name="session-import"),
    path("compare/", compare.run_compare, name="run-compare"),
    path("evals/", evals.eval_list, name="evals"),
    path("evals/new/", evals.eval_new, name="eval-new"),
    path("evals/compare/", eval_compare.eval_compare, name="eval-compare"),
    path("evals/<uuid:pk>/", eval_run.eval_run, name="eval-run"),
    path("sessions/<uuid:pk>/", sessions.session_timeline, name="session-timeline"),
    path("sessions/<uuid:pk>/artifacts/", sessions.session_artifacts, name="session-artifacts"),
    path("sessions/<uuid:pk>/waterfall/", traces.session_waterfall, name="session-waterfall"),
    path("sessions/<uuid:pk>/delete/", sessions.session_delete, name="session-delete"),
    path(
        "sessions/<uuid:pk>/dataset-case/",
        datasets.session_add_turn,
        name="session-dataset-case",
    ),
    path(
        "sessions/<uuid:pk>/dataset-card/",
        datasets.session_turn_card,
        name="session-dataset-card",
    ),
    path("files/<str:blob_id>/", files.attached_file, name="attached-file"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    # Browsers ask for /favicon.ico where a page names no icon (a JSON error, a download).
    path("favicon.ico", RedirectView.as_view(url=static("studio/img/favicon.svg")), name="favicon"),
    # The admin's sign-in page, counted as Studio's (before the admin's own route).
    path("admin/login/", admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/", include("studio.api.urls")),
]

# Errors are pages of the app, and JSON under /api/ (studio.web.errors).
handler400 = "studio.web.errors.bad_request"
handler403 = "studio.web.errors.permission_denied"
handler404 = "studio.web.errors.page_not_found"
handler500 = "studio.web.errors.server_error"
