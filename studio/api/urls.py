from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from studio.api import mcp, views

router = SimpleRouter()
router.register("agents", views.AgentViewSet, basename="agent")
router.register("models", views.ModelConfigViewSet, basename="modelconfig")
router.register("sessions", views.SessionViewSet, basename="session")
router.register("runs", views.RunViewSet, basename="run")
router.register("mcp-servers", mcp.McpServerViewSet, basename="mcpserver")

urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("tools/", views.ToolListView.as_view(), name="api-tools"),
    path("agent-spec/schema/", views.AgentSpecSchemaView.as_view(), name="api-agent-spec-schema"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's init script as a file: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", views.ApiIndexView.as_view(), name="api-index"),
    path("", include(router.urls)),
]
