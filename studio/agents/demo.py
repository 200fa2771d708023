"""The demo account's agents: each runs offline on the scripted demo model
(see ``studio.demo_model`` for how their instructions steer it)."""

from __future__ import annotations

from typing import Any

MODEL = "scripted"


def _llm(name: str, instruction: str, **extra: Any) -> dict[str, Any]:
    return {"type": "llm", "name": name, "model": MODEL, "instruction": instruction, **extra}


DEMO_AGENTS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "calculator",
        "A single agent with a calculator tool. Try: what is (12 + 30) * 2?",
        _llm(
            "calculator",
            "You are a careful assistant. Work out arithmetic with the calculator tool.\n"
            "Reply: Ask me to work something out, for example: what is (12 + 30) * 2?",
            tools=[{"name": "calculator"}],
        ),
    ),
    (
        "pipeline",
        "A sequential pipeline: a researcher, a writer and an editor, in turn.",
        {
            "type": "sequential",
            "name": "pipeline",
            "sub_agents": [
                _llm("researcher", "Collect facts.\nReply: Notes on: {last_user_message}"),
                _llm("writer", "Write a paragraph.\nReply: A draft built from the notes."),
                _llm("editor", "Polish the draft.\nReply: The final, edited text."),
            ],
        },
    ),
    (
        "fan_out",
        "A parallel fan-out: three perspectives on the same question at once.",
        {
            "type": "parallel",
            "name": "fan_out",
            "sub_agents": [
                _llm(
                    "optimist",
                    "Look on the bright side.\nReply: Upside: it could work.",
                    output_key="upside",
                ),
                _llm(
                    "skeptic",
                    "Look for risks.\nReply: Risk: it might not scale.",
                    output_key="risk",
                ),
                _llm(
                    "pragmatist",
                    "Find a next step.\nReply: Next step: try it small.",
                    output_key="next_step",
                ),
            ],
        },
    ),
    (
        "refine_loop",
        "A loop: a drafter improves the draft until a reviewer calls exit_loop.",
        {
            "type": "loop",
            "name": "refine_loop",
            "max_iterations": 4,
            "sub_agents": [
                _llm(
                    "drafter",
                    "Improve the current draft: {draft}\n"
                    "Reply: A rough first draft.\n"
                    "Reply: A polished second draft.",
                    output_key="draft",
                ),
                _llm(
                    "reviewer",
                    "Review the draft: {draft}\n"
                    "Once the draft is good enough, end the loop with exit_loop.\n"
                    "Exit when: polished\n"
                    "Reply: Not there yet; another pass, please.",
                    tools=[{"name": "exit_loop"}],
                ),
            ],
        },
    ),
    (
        "helpdesk",
        "A coordinator that transfers each request to the right specialist.",
        _llm(
            "helpdesk",
            "Route every request to the best specialist with transfer_to_agent.",
            sub_agents=[
                _llm(
                    "math_tutor",
                    "Answer arithmetic questions with the calculator tool.\n"
                    "Result: The math tutor worked it out: {last_tool_result}",
                    description="Arithmetic: sums, products, numbers and calculations.",
                    tools=[{"name": "calculator"}],
                ),
                _llm(
                    "poet",
                    "Write short poems.\nReply: Roses are red, agents are too: {last_user_message}",
                    description="Writes poems, verses and rhymes.",
                ),
            ],
        ),
    ),
]
