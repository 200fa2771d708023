"""The websocket edge: authenticate, validate the frame, call a service, send."""

from studio.consumers.session import SessionConsumer

__all__ = ["SessionConsumer"]
