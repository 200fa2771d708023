"""The live timeline websocket, ``/ws/sessions/<uuid>/?after=<seq>``; the protocol is
described in ``studio.live``.

The consumer checks access, joins the session's ``SessionWatch`` before reading the
backlog, and hands what it must send to its ``ViewerCursor`` (strict seq order, no gap,
no duplicate). What a client asks (start, pause, resume, cancel, decide) goes to the services.
"""

from __future__ import annotations

from typing import Any, assert_never

from studio import metrics, services
from studio.consumers.base import GuardedConsumer
from studio.consumers.cursor import ViewerCursor
from studio.consumers.watch import SessionWatch
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.live import protocol, reads
from studio.models import Session


class SessionConsumer(GuardedConsumer):
    session: Session | None = None
    watch: SessionWatch | None = None
    cursor: ViewerCursor | None = None

    async def open(self) -> None:
        try:
            self.session, after = await db_sync_to_async(reads.authorise)(
                self.scope["user"],
                self.scope["url_route"]["kwargs"]["session_id"],
                self.scope["query_string"],
            )
            batched = reads.batched(self.scope["query_string"])
        except reads.Refused as refused:
            await self.close(code=refused.close_code)
            return
        self.watch = watch = SessionWatch.add(self.session.pk, self)  # before any wait
        metrics.LIVE_VIEWERS.inc()
        await watch.join()
        self.cursor = cursor = ViewerCursor(
            self.watch, self._send_text, after=after, batched=batched
        )
        async with cursor.lock:
            status = await cursor.start()
        services.show_calls_in_flight(status)  # partial events are not in the backlog

    async def disconnect(self, code: int) -> None:
        if (watch := self._let_go()) is not None:
            await watch.leave(self)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # cancelled before ``disconnect`` ran: the server gave up waiting for it
            if (watch := self._let_go()) is not None:
                watch.drop(self)

    def _let_go(self) -> SessionWatch | None:
        """The watch this viewer is still in, now counted out (once)."""
        watch, self.watch = self.watch, None
        if watch is not None:
            metrics.LIVE_VIEWERS.dec()
        return watch

    # From the session's watch

    async def live_batch(self, batch: protocol.Batch) -> None:
        if self.cursor is not None:
            await self.cursor.deliver(batch)

    async def make_good(self, last_seq: int, session_status: str) -> None:
        if self.cursor is not None:
            await self.cursor.resync(last_seq, session_status)

    async def _send_text(self, text: str) -> None:
        await self.send(text_data=text)

    # From the client

    async def frame(self, text_data: str | None) -> None:
        if self.session is None:
            return
        if text_data is None:
            await self.send(text_data=protocol.error_frame("invalid", "frames are JSON text"))
            return
        try:
            await self._handle(protocol.parse_client_frame(text_data), self.session)
        except protocol.BadFrame as exc:
            await self.send(text_data=protocol.error_frame("invalid", str(exc)))
        except StudioError as exc:
            await self.send(text_data=protocol.error_frame(exc.code, exc.message))
        except Session.DoesNotExist:  # deleted while the socket was open
            await self.close(code=protocol.CLOSE_NOT_FOUND)

    async def _handle(self, frame: protocol.ClientFrame, session: Session) -> None:
        match frame:
            case protocol.UserMessageFrame(text=text):
                await db_sync_to_async(services.start_run)(session, text)
            case protocol.CancelFrame():
                await db_sync_to_async(services.cancel_active_run)(session)
            case protocol.PauseFrame():
                await db_sync_to_async(services.pause_active_run)(session)
            case protocol.ResumeFrame():
                await db_sync_to_async(services.resume_active_run)(session)
            case protocol.ApprovalFrame():
                user = self.scope["user"]
                await services.decide_approval(session, frame.body(), user=user, via="socket")
            case protocol.AnswerFrame():
                answered_by = self.scope["user"].get_username()
                await services.answer_question(session, frame.body(), answered_by=answered_by)
            case _:
                assert_never(frame)
