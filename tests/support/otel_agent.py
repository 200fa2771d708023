"""A small agent built elsewhere, traced with the real OpenTelemetry SDK and exported
over OTLP/HTTP (opentelemetry-exporter-otlp-proto-http) to Studio's ``/v1/traces``.

    python -m tests.support.otel_agent --endpoint URL --token T [--steps N] [--delay S]
        [--openai BASE_URL] [--json]

With ``--gate DIR`` each round after the first waits for the file ``DIR/go-<round>``.
It prints its trace id (hex) on the first line of stdout, then runs ``invoke_agent``
over ``--steps`` rounds of a model call (``--delay`` seconds) and a tool call (half that), its
spans exported in small batches as they end (so Studio sees them while it runs). With
``--openai``, each model call is a real ``openai`` client call to that OpenAI-compatible
server, its span made by the official instrumentation
(``opentelemetry-instrumentation-openai-v2``); otherwise the script writes its own chat
spans in the GenAI conventions. It flushes and exits 0 when the agent is done.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

AGENT = "weather_bot"
ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-test-agent"}))
    exporter = OTLPSpanExporter(
        endpoint=args.endpoint,
        headers={"Authorization": f"Bearer {args.token}"},
        compression=Compression.Gzip,
    )
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    tracer = provider.get_tracer("tests.support.otel_agent")
    ask = _openai_chat(args.openai, provider) if args.openai else _own_chat(tracer, args.delay)
    with tracer.start_as_current_span(
        f"invoke_agent {AGENT}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT},
    ) as root:
        print(format(root.get_span_context().trace_id, "032x"), flush=True)
        for step in range(args.steps):
            _wait_for_gate(args.gate, step)
            answer = ask(f"What is the weather in city {step}?")
            _tool(tracer, step, answer, args.delay)
    provider.force_flush()
    provider.shutdown()
    return 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--openai", default="")
    parser.add_argument("--gate", default="")
    return parser.parse_args(argv)


def _wait_for_gate(gate: str, step: int) -> None:
    """With ``--gate DIR``, step N > 0 waits until the file ``DIR/go-N`` exists (so a
    test can hold the agent mid-run while it looks), for 60 s at most."""
    if not gate or step == 0:
        return
    path, deadline = Path(gate) / f"go-{step}", time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def _own_chat(tracer: trace.Tracer, delay: float) -> Any:
    def ask(question: str) -> str:
        answer = f"Sunny, asked: {question}"
        with tracer.start_as_current_span("chat scripted-model") as span:
            time.sleep(delay)  # the model thinks
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "scripted",
                    "gen_ai.request.model": "scripted-model",
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 4,
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": question}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                    ),
                    "weather.custom_flag": True,
                }
            )
        return answer

    return ask


def _openai_chat(base_url: str, provider: TracerProvider) -> Any:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

    def ask(question: str) -> str:
        reply = client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": question}]
        )
        return reply.choices[0].message.content or ""

    return ask


def _tool(tracer: trace.Tracer, step: int, answer: str, delay: float) -> None:
    with tracer.start_as_current_span("execute_tool lookup_weather") as span:
        time.sleep(delay / 2)  # the tool works
        span.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_weather",
                "gen_ai.tool.call.id": f"call_{step}",
                "gen_ai.tool.call.arguments": json.dumps({"city": step}),
                "gen_ai.tool.call.result": answer[:40],
            }
        )


# For the tests that start it


_MAKE_TOKEN = """
from django.contrib.auth import get_user_model
from studio.models import IngestToken
from studio.services import tokens
user = get_user_model().objects.get(username={username!r})
print(tokens.create_token(IngestToken, user, "otel agent")[1])
"""


def make_ingest_token(server: Any, username: str) -> str:
    """A new ingest token of ``username`` in ``server``'s data (a ``DaphneServer``)."""
    done = server.manage("shell", "-c", _MAKE_TOKEN.format(username=username))
    token: str = done.stdout.strip().splitlines()[-1]
    return token


def start_agent(
    server_url: str,
    token: str,
    *,
    steps: int,
    delay: float,
    openai_url: str = "",
    gate: Path | None = None,
) -> subprocess.Popen[str]:
    """This script, started against Studio at ``server_url``; read the trace id from the
    first line of its stdout."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        # The instrumentation puts prompts and answers on the span (the current
        # conventions' gen_ai.input.messages and gen_ai.output.messages).
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    }
    command = [sys.executable, "-m", "tests.support.otel_agent", "--endpoint"]
    command += [f"{server_url}/v1/traces", "--token", token, "--steps", str(steps)]
    command += ["--delay", str(delay)] + (["--openai", openai_url] if openai_url else [])
    command += ["--gate", str(gate)] if gate is not None else []
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


if __name__ == "__main__":
    sys.exit(main())
