"""Owner scoping. Every queryset is filtered to ``request.user`` in ``get_queryset()``,
so another user's ids answer 404 exactly like ids that do not exist. Staff get no
extra API access to other people's objects: the admin is where staff look at them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Model, QuerySet
from rest_framework import exceptions, generics, permissions
from rest_framework.request import Request
from rest_framework.views import APIView


def owned[M: Model](queryset: QuerySet[M], request: Request, owner_path: str) -> QuerySet[M]:
    """``queryset`` narrowed to objects whose ``owner_path`` is the requesting user."""
    if not request.user.is_authenticated:
        return queryset.none()
    return queryset.filter(**{owner_path: request.user.pk})


def request_owner(request: Request) -> AbstractBaseUser:
    """The authenticated user a request acts for."""
    user = request.user
    if not isinstance(user, AbstractBaseUser) or not user.is_authenticated:
        raise exceptions.NotAuthenticated()
    return user


class OwnedQuerysetMixin(generics.GenericAPIView[Any]):
    # A view's docstring is its description in the OpenAPI schema, and a view without
    # one inherits this class's: so this mixin says nothing there, and each view says
    # what it serves. ``owner_path`` names the owner's id, e.g. ``"session__owner"``.
    owner_path = "owner"

    def get_queryset(self) -> QuerySet[Any]:
        return owned(super().get_queryset(), self.request, self.owner_path)


class IsOwner(permissions.BasePermission):
    """Defence in depth behind the scoped querysets: the object's owner must be the user."""

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        owner_path: str = getattr(view, "owner_path", "owner")
        value: Any = obj
        for part in owner_path.split("__"):
            value = getattr(value, part)
        return bool(getattr(value, "pk", None) == request.user.pk)
