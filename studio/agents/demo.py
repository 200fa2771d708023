"""The demo account's models and agents: each agent runs offline on a scripted model
(see ``studio.agents.demo_model`` for how their instructions steer it).

Two models: ``scripted`` answers at once; ``demo``, which the demo agents use, takes a
moment before each answer and streams it word by word, as a hosted model does, so a
demo run shows in its waterfall where the time goes and can be watched as it happens.
Between them the agents draw every kind of span: a sequential pipeline whose researcher
asks a fact-checker agent as a tool, a parallel fan-out, a loop, a transfer and a
question to the user that the run waits on.
"""

from __future__ import annotations

from typing import Any

MODEL = "scripted"
DEMO_MODEL = "demo"
MODELS: dict[str, dict[str, Any]] = {
    MODEL: {},
    DEMO_MODEL: {"latency_s": 0.35, "token_delay_s": 0.04},
}
"""The demo account's scripted models and their options."""


def _llm(name: str, instruction: str, **extra: Any) -> dict[str, Any]:
    return {"type": "llm", "name": name, "model": DEMO_MODEL, "instruction": instruction, **extra}


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
        "A sequential pipeline: a researcher (who asks a fact-checker agent, called as a "
        "tool), a writer and an editor, in turn.",
        {
            "type": "sequential",
            "name": "pipeline",
            "sub_agents": [
                _llm(
                    "researcher",
                    "Collect facts and have the fact_checker check them.\n"
                    "Result: Notes, checked: {last_tool_result}",
                    agent_tools=[
                        _llm(
                            "fact_checker",
                            "Check the facts.\nReply: Two sources agree on: {last_user_message}",
                            description="Checks facts against two sources.",
                        )
                    ],
                ),
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
        "A loop: a drafter improves the draft until a reviewer calls exit_loop; then an "
        "editor presents the final draft.",
        {
            "type": "sequential",
            "name": "refine_loop",
            "sub_agents": [
                {
                    "type": "loop",
                    "name": "refine",
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
                _llm(
                    "presenter",
                    "Present the final draft: {draft}\n"
                    "Reply: Here is the final draft, after review: {draft}",
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
    (
        "trip_planner",
        "Asks you a question mid-run (ask_user), waits for your answer and plans with it.",
        _llm(
            "trip_planner",
            "Plan a day trip. Before planning, ask the user with ask_user where they will "
            "start from and when.\n"
            "Ask: Where will you start from, and on which day?\n"
            "Result: A day trip from {last_tool_result}: the 9:12 train out, lunch by the "
            "river, a museum in the afternoon and the 18:40 train home.",
            tools=[{"name": "ask_user"}],
        ),
    ),
]

DEMO_EVALS = "demo-evals"
DEMO_EVALS_AGENT = "calculator"
DEMO_EVAL_CASES: list[dict[str, Any]] = [
    {
        "name": "sum-then-double",
        "input": {"turns": ["What is (12 + 30) * 2?"]},
        "expect": {
            "final_output": "The result is 84.",
            "tool_calls": [{"name": "calculator", "args": {"expression": "(12 + 30) * 2"}}],
        },
        "tags": ["demo", "tool"],
    },
    {
        "name": "division",
        "input": {"turns": ["What is 100 / 8?"]},
        "expect": {
            "final_output": "The result is 12.5.",
            "tool_calls": [{"name": "calculator", "args": {"expression": "100 / 8"}}],
        },
        "tags": ["demo", "tool"],
    },
    {
        "name": "greeting",
        "input": {"turns": ["Hello! What can you do?"]},
        "expect": {
            "final_output": "Ask me to work something out, for example: what is (12 + 30) * 2?",
            "tool_calls": [],
        },
        "tags": ["demo", "no-tool"],
    },
]
"""The demo account's ``demo-evals`` dataset: what the ``calculator`` demo agent answers
on its scripted model (``studio.agents.demo_model``), so an eval run of it passes out of
the box: ``run_evals --dataset demo-evals --agent calculator``."""
