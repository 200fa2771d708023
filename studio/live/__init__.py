"""The live timeline: channel groups, the messages sent through them, websocket frames.

Split by reason to change: ``protocol`` (frames, close codes, client frame schemas),
``status`` (what a session's run is doing, read from the database), ``publisher``
(sending stored events to a session's group) and ``reads`` (who may watch, the backlog).

Persist, then publish. A run's executor (``studio.runs``) sends each event to the
session's group only once it is stored (its ``seq`` assigned in the same transaction);
the database is the truth and the channel layer only a fast path, which may drop
messages: viewers fill any gap from the database, and a run never stops because
publishing failed.

Group ``session.<session uuid>`` carries one message type, in the order published:

    {"type": "live.batch",
     "events": [[seq | None, after_seq, "<Event JSON>"], ...],
     "status": {"run": <Run JSON> | None, "waiting_for": ..., "last_seq": N} | None}

Each event is the Event wire JSON (exactly what ``GET /api/sessions/{id}/events/``
returns) as text, so the layer copies one string per viewer. Stored events have their
``seq`` (and ``after_seq`` = seq - 1); partial (token) events ``None`` and ``after_seq``,
the last stored seq when they were published; partials are never stored. ``status``,
when the run started, ended or changed what it waits for, comes after the events;
``last_seq`` is the session's last stored seq then, which a viewer catches up to
before passing the status on. A run's final status is published once its executor has
stored its last event and let go of the run, so no viewer sees a run end before the
events it ends with. A run's publisher sends what it has at once, then gathers what
arrives within ``BATCH_WINDOW_S`` (5 ms) into its next message: a lone event goes out
without delay and a burst in few messages (the channel layer's cost is per message
and per viewer).

Websocket ``/ws/sessions/<session uuid>/?after=<seq>[&batch=1]`` (``studio.consumers``),
session cookie auth, origin checked. The server accepts, then closes with 4401
(anonymous), 4404 (no such session, or another user's: nobody can tell the two apart)
or 4400 (``after`` not an integer from 0 to the session's last seq, ``batch`` neither 0
nor 1) before any frame. A websocket message carries one frame, or with ``batch=1`` (the
browser's) a JSON array of the frames of one live message or one backlog page, in
order; a reply to a client frame (``error``) is always one frame.
Otherwise it joins the group, sends the stored events with seq > ``after`` (paged),
then live ones. Every ``STUDIO_LIVE_RESYNC_S`` the session's viewers in one process compare with the
database (one read for all of them), so what the channel layer dropped still arrives;
a channel layer outage (Redis stalled or unreachable) never closes the socket, the
viewer catches up from the database instead. Closing the socket never stops a run.
Server frames:

- ``{"type": "event", "event": <Event JSON>}``: stored events, strictly in seq order,
  never a seq twice, never a gap.
- ``{"type": "event", "event": <partial Event JSON, seq null>, "after_seq": N}``: a token
  chunk that belongs between stored events N and N + 1; the stored agent_message that
  follows replaces the chunks before it. Only sent while the viewer is at seq N.
- ``{"type": "status", "run": <Run JSON as GET /api/runs/{id}/> | None, "waiting_for":
  None | "model" | "tool" | "approval" | "answer" | "paused" | "rate_limit" | "retry" |
  "elsewhere"}``: on connect, then whenever it changes. ``run`` is the session's latest
  run; ``waiting_for`` is only set while that run is active (``elsewhere`` for an
  ingested run: its agent runs outside Studio).
- ``{"type": "error", "code": "...", "detail": "..."}``: a bad or refused client frame;
  the socket stays open. Codes: ``invalid`` (not a known frame), ``run_in_progress``,
  ``too_many_runs``, ``session_has_no_agent``, ``no_active_run``, ``run_not_running``,
  ``run_not_paused``, ``approval_not_pending``,
  ``approval_not_delivered`` (worker execution: the worker did not take the decision in
  time; ``studio.worker``), ``question_not_pending``, ``question_not_delivered`` (the
  same for an answer).

Client frames (JSON text, unknown fields refused): ``{"type": "user_message", "text":
...}`` starts a run like ``POST /api/sessions/{id}/messages/``; ``{"type": "cancel"}``
cancels the session's active run; ``{"type": "pause"}`` and ``{"type": "resume"}``
pause its running run between steps and resume it, like ``POST /api/runs/{id}/pause/``
and ``/resume/``; ``{"type": "approval", "call_id", "args_hash", "decision": "approve" |
"deny", "edited_args"?, "reason"?}`` decides a pending approval like ``POST
/api/sessions/{id}/approvals/``; ``{"type": "answer", "call_id", "args_hash", "text"}``
answers a question the agent asked (a ``user_question`` event) like ``POST
/api/sessions/{id}/answers/``. A frame over ``STUDIO_WS_MAX_MESSAGE_BYTES``
closes the socket with 4009, a flood (more than ``STUDIO_WS_BURST`` frames at once or
``STUDIO_WS_RATE_PER_S`` sustained) with 4429. (Not 1009: Daphne's websocket library
lets an application close only with 1000 or 3000-4999. Daphne itself closes with 1009
on frames over its own limit, 1 MiB by default.)
"""

from studio.live.protocol import (
    CLOSE_BAD_REQUEST,
    CLOSE_FLOOD,
    CLOSE_NOT_FOUND,
    CLOSE_TOO_BIG,
    CLOSE_UNAUTHENTICATED,
    LAYER,
    AnswerBody,
    ApprovalBody,
    BadFrame,
    Batch,
    ClientFrame,
    Status,
    TokenBucket,
    group_name,
    parse_client_frame,
)
from studio.live.publisher import Publisher, publish
from studio.live.reads import Refused, authorise, cursor, stored_events
from studio.live.status import snapshot

__all__ = [
    "CLOSE_BAD_REQUEST",
    "CLOSE_FLOOD",
    "CLOSE_NOT_FOUND",
    "CLOSE_TOO_BIG",
    "CLOSE_UNAUTHENTICATED",
    "LAYER",
    "AnswerBody",
    "ApprovalBody",
    "BadFrame",
    "Batch",
    "ClientFrame",
    "Publisher",
    "Refused",
    "Status",
    "TokenBucket",
    "authorise",
    "cursor",
    "group_name",
    "parse_client_frame",
    "publish",
    "snapshot",
    "stored_events",
]
