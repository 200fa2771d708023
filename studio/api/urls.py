from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from studio.api import (
    approvals,
    artifacts,
    budgets,
    bundles,
    catalogue,
    costs,
    datasets,
    diffs,
    evals,
    forks,
    mcp,
    memories,
    prompts,
    remote_agents,
    skills,
    views,
)

router = SimpleRouter()
router.register("agents", views.AgentViewSet, basename="agent")
router.register("models", views.ModelConfigViewSet, basename="modelconfig")
router.register("sessions", views.SessionViewSet, basename="session")
router.register("runs", views.RunViewSet, basename="run")
router.register("mcp-servers", mcp.McpServerViewSet, basename="mcpserver")
router.register("remote-agents", remote_agents.RemoteAgentViewSet, basename="remoteagent")

urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("approvals/", approvals.ApprovalInboxView.as_view(), name="api-approvals"),
    path("approvals/decide/", approvals.ApprovalDecideView.as_view(), name="api-approvals-decide"),
    path(
        "approvals/decisions/",
        approvals.ApprovalDecisionListView.as_view(),
        name="api-approval-decisions",
    ),
    path(
        "approvals/decisions/export/",
        approvals.ApprovalDecisionExportView.as_view(),
        name="api-approval-decisions-export",
    ),
    path("bundles/import/", bundles.BundleImportView.as_view(), name="api-bundle-import"),
    path("budget/", budgets.UserBudgetView.as_view(), name="api-budget"),
    path(
        "users/<int:user_id>/budget/",
        budgets.StaffUserBudgetView.as_view(),
        name="api-user-budget",
    ),
    path("tools/", catalogue.ToolListView.as_view(), name="api-tools"),
    path("hooks/", catalogue.HookListView.as_view(), name="api-hooks"),
    path(
        "agent-spec/schema/", catalogue.AgentSpecSchemaView.as_view(), name="api-agent-spec-schema"
    ),
    path("costs/", costs.CostsView.as_view(), name="api-costs"),
    path("evals/", evals.EvalListView.as_view(), name="api-evals"),
    path("evals/compare/", evals.EvalCompareView.as_view(), name="api-evals-compare"),
    path("evals/history/", evals.EvalHistoryView.as_view(), name="api-evals-history"),
    path("evals/<uuid:id>/", evals.EvalDetailView.as_view(), name="api-eval"),
    path("evals/<uuid:id>/results/", evals.EvalResultsView.as_view(), name="api-eval-results"),
    path("evals/<uuid:id>/cancel/", evals.EvalCancelView.as_view(), name="api-eval-cancel"),
    path("evaluators/", evals.EvaluatorListView.as_view(), name="api-evaluators"),
    path(
        "prompt-templates/",
        prompts.PromptTemplateListView.as_view(),
        name="api-prompt-templates",
    ),
    path(
        "prompt-templates/preview/",
        prompts.PromptTemplatePreviewView.as_view(),
        name="api-prompt-template-preview",
    ),
    path(
        "prompt-templates/<str:name>/",
        prompts.PromptTemplateDetailView.as_view(),
        name="api-prompt-template",
    ),
    path("memories/", memories.MemoryListView.as_view(), name="api-memories"),
    path("memories/<int:pk>/", memories.MemoryDetailView.as_view(), name="api-memory"),
    path(
        "sessions/<uuid:id>/artifacts/",
        artifacts.ArtifactListView.as_view(),
        name="api-artifacts",
    ),
    path(
        "sessions/<uuid:id>/artifacts/<str:name>/versions/",
        artifacts.ArtifactVersionsView.as_view(),
        name="api-artifact-versions",
    ),
    path(
        "sessions/<uuid:id>/artifacts/<str:name>/download/",
        artifacts.ArtifactDownloadView.as_view(),
        name="api-artifact-download",
    ),
    # Before the router's runs/<pk>/, which would take "compare" for a run's id.
    path("runs/compare/", diffs.RunCompareView.as_view(), name="api-run-compare"),
    path("sessions/<uuid:id>/forks/", forks.ForkListView.as_view(), name="api-session-forks"),
    path("sessions/<uuid:id>/continue/", forks.ContinueView.as_view(), name="api-session-continue"),
    path("skills/", skills.SkillListView.as_view(), name="api-skills"),
    path("datasets/", datasets.DatasetListView.as_view(), name="api-datasets"),
    path("datasets/import/", datasets.DatasetImportView.as_view(), name="api-dataset-import"),
    path("datasets/<uuid:id>/", datasets.DatasetDetailView.as_view(), name="api-dataset"),
    path(
        "datasets/<uuid:id>/versions/",
        datasets.DatasetVersionListView.as_view(),
        name="api-dataset-versions",
    ),
    path(
        "datasets/<uuid:id>/versions/<int:number>/",
        datasets.DatasetVersionDetailView.as_view(),
        name="api-dataset-version",
    ),
    path(
        "datasets/<uuid:id>/cases/",
        datasets.DatasetCaseListView.as_view(),
        name="api-dataset-cases",
    ),
    path(
        "datasets/<uuid:id>/cases/<path:name>/",
        datasets.DatasetCaseDetailView.as_view(),
        name="api-dataset-case",
    ),
    path(
        "datasets/<uuid:id>/export/",
        datasets.DatasetExportView.as_view(),
        name="api-dataset-export",
    ),
    path(
        "sessions/<uuid:id>/dataset-cases/",
        datasets.SessionDatasetCaseView.as_view(),
        name="api-session-dataset-cases",
    ),
    path("skills/<str:name>/", skills.SkillDetailView.as_view(), name="api-skill"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's init script as a file: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", catalogue.ApiIndexView.as_view(), name="api-index"),
    path("", include(router.urls)),
]
