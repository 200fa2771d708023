"""The offline demo model: a scripted model whose script is its agent's instruction.

A ``scripted`` model config without a ``script`` answers with this responder, so the
demo agents run with no network and no API key. It is deliberately simple and reads
the request it is given:

- right after one of its own tool calls returns, it answers with its instruction's
  ``Result:`` line, or "The result is {last_tool_result}."; when a person or a policy
  denied the call, it says so in a sentence (with the reason) instead;
- it calls a tool only when its instruction names the tool: ``ask_user`` asks the
  instruction's ``Ask:`` line once a user message (its answer then comes back as the
  tool's result; when nobody answered in time, it says so);
  ``transfer_to_agent`` goes to the offered agent whose name and description best
  match the user's words; ``calculator`` gets the arithmetic found in the user's last
  message; ``exit_loop`` is called once the word after ``Exit when:`` appears
  elsewhere in the (state-filled) instruction; an agent offered as a tool (its one
  argument is ``request``) is asked the user's last message;
- otherwise it answers with the first ``Reply:`` line of its instruction whose text is
  not already in the instruction (so a loop step can move on to its next reply once
  its previous one is in state), or with the last one. ``{last_user_message}`` and
  ``{last_tool_result}`` in a reply are filled in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agents_core.exceptions import ToolTimeoutError
from agents_core.ledger import DENIED
from agents_core.llm import ChatMessage, LlmRequest, ScriptedModel, ScriptedResponse, ToolSchema
from agents_core.llm.scripted import ScriptedToolCall
from agents_core.tools.ask_user import ASK_USER_TOOL_NAME

_ARITHMETIC = re.compile(r"[-+(]*\d[\d\s.+\-*/%^()]*")
_WORD = re.compile(r"[a-z]{4,}")
_OTHER_AGENT = re.compile(r"^\[[A-Za-z_][\w-]* said\] ")


def demo_model(name: str = "scripted", *, token_delay_s: float = 0.0) -> ScriptedModel:
    return ScriptedModel(script=[respond], name=name, loop=True, token_delay_s=token_delay_s)


def respond(request: LlmRequest) -> ScriptedResponse:
    instruction = request.system_instruction or ""
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role == "tool":
        if last.text.startswith((f"{DENIED}:", POLICY_REFUSAL)):
            return ScriptedResponse(text=_denied_reply(last.name or "tool", last.text))
        if last.name == ASK_USER_TOOL_NAME and last.text.startswith(f"{ToolTimeoutError.code}:"):
            return ScriptedResponse(text=NO_ANSWER)
        results, _ = _directives(instruction, "Result")
        return ScriptedResponse(text=results[0] if results else "The result is {last_tool_result}.")
    offered = {tool.name: tool for tool in request.tools if tool.name in instruction}
    user_text = _last_user_text(request.messages)
    questions, _ = _directives(instruction, "Ask")
    if (
        ASK_USER_TOOL_NAME in offered
        and questions
        and not _answered(request.messages, ASK_USER_TOOL_NAME)
    ):
        return _call(ASK_USER_TOOL_NAME, question=questions[0])
    if "transfer_to_agent" in offered and (target := _pick_target(request, user_text)):
        return _call("transfer_to_agent", agent_name=target)
    if "calculator" in offered and (expression := _arithmetic(user_text)):
        return _call("calculator", expression=expression)
    if "exit_loop" in offered and _exit_condition_met(instruction):
        return _call("exit_loop")
    if (agent_tool := _agent_tool(offered)) is not None and user_text:
        if not _answered(request.messages, agent_tool):
            return _call(agent_tool, request=user_text)
        results, _ = _directives(instruction, "Result")  # its answer comes back in its words
        return ScriptedResponse(text=results[0] if results else "{last_tool_result}")
    return ScriptedResponse(text=_reply(instruction, default="You said: {last_user_message}"))


def _agent_tool(offered: Mapping[str, ToolSchema]) -> str | None:
    """The first offered tool that is an agent (``AgentTool``: one ``request`` argument)."""
    for name, tool in offered.items():
        if set(tool.parameters.get("properties", {})) == {"request"}:
            return name
    return None


def _answered(messages: Sequence[ChatMessage], tool: str) -> bool:
    """Whether ``tool`` answered since the user last spoke (other agents' words, which
    the history hands on as ``[name said] ...`` user messages, do not count)."""
    for message in reversed(messages):
        if message.role == "tool" and message.name == tool:
            return True
        if message.role == "user" and not _OTHER_AGENT.match(message.text):
            return False
    return False


def _denied_reply(tool: str, refusal: str) -> str:
    """What the demo agent says when a person or a policy refused its call: a sentence."""
    if refusal.startswith(POLICY_REFUSAL):  # denied by policy 'name': reason. The call ...
        rule, _, rest = refusal.removeprefix(POLICY_REFUSAL).partition("'")
        reason = rest.removeprefix(":").strip().removesuffix("The call did not run.").strip()
        why = f" ({reason.rstrip('.')})" if reason.rstrip(".") else ""
        return (
            f"I did not run the {tool} tool: the policy {rule} refused the call{why}. "
            "Tell me how you would like me to go on."
        )
    _, found, reason = refusal.partition("Reason:")
    reason = reason.strip().rstrip(".")
    because = f" You said: {reason}." if found and reason else ""
    return (
        f"I did not run the {tool} tool, because you declined the call.{because} "
        "Tell me how you would like me to go on."
    )


NO_ANSWER = "Nobody answered my question in time, so I stopped there: ask me again when you can."
"""What the demo agent says when its question to the user went unanswered."""
POLICY_REFUSAL = "denied by policy '"
"""How a policy's refusal starts (``agents_core.policies.PolicyVerdict.refusal``)."""


def _call(name: str, **args: str) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name=name, args=args)])


def _last_user_text(messages: Sequence[ChatMessage]) -> str:
    return next((m.text for m in reversed(messages) if m.role == "user"), "")


def _directives(instruction: str, key: str) -> tuple[list[str], str]:
    """The values of ``key:`` lines, and the instruction without them."""
    values, rest = [], []
    for line in instruction.splitlines():
        stripped = line.strip()
        if stripped.startswith(f"{key}:"):
            values.append(stripped[len(key) + 1 :].strip())
        else:
            rest.append(line)
    return values, "\n".join(rest)


def _reply(instruction: str, *, default: str) -> str:
    replies, rest = _directives(instruction, "Reply")
    if not replies:
        return default
    fresh = [reply for reply in replies if reply not in rest]
    return fresh[0] if fresh else replies[-1]


def _exit_condition_met(instruction: str) -> bool:
    words, rest = _directives(instruction, "Exit when")
    return any(word.lower() in rest.lower() for word in words if word)


def _arithmetic(text: str) -> str | None:
    found = [m.group().strip() for m in _ARITHMETIC.finditer(text)]
    candidates = [f for f in found if any(op in f for op in "+-*/%^")]
    return max(candidates, key=len) if candidates else None


def _stems(text: str) -> set[str]:
    return {word[:4] for word in _WORD.findall(text.lower())}


def _pick_target(request: LlmRequest, user_text: str) -> str | None:
    """The offered agent sharing the most word stems with the user's message."""
    transfer = next(t for t in request.tools if t.name == "transfer_to_agent")
    enum = transfer.parameters.get("properties", {}).get("agent_name", {}).get("enum", [])
    names = [str(name) for name in enum]
    if not names:
        return None
    described = dict(re.findall(r"^- ([\w-]+): (.*)$", transfer.description, re.MULTILINE))
    wanted = _stems(user_text)

    def score(name: str) -> int:
        return len(wanted & _stems(f"{name.replace('_', ' ')} {described.get(name, '')}"))

    return max(names, key=score)
