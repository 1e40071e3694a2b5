"""The executor's repair turn through the real pipeline: a quoted id becomes a PASS.

Only the executor runs in ``llm`` mode, against the scripted server in this
process: it calls ``query_metrics``, answers with a quoted
``source_invocation_id`` (which the gatekeeper rejects), and answers correctly
once the repair turn has shown it the gatekeeper's errors. The run must end in
one PASS answer, and its trace must hold the repair step.
"""

from __future__ import annotations

from pathlib import Path

from projections import trace
from services.executor.ids import invocation_id
from tests.integration.test_trace import wait_answered
from tests.support import fake_openai as fake
from tests.support.cpu_answer import CPU_QUESTION, cpu_answer_text
from tests.support.pipeline import running_pipeline
from tests.support.projection import ProjectionFactory, topic_ends
from tests.support.stack import StackHandle
from tracebound.client import AnswerReader, new_request, publish

EXECUTOR = fake.system_prompt_has("You are the executor of an evidence-gated")


def test_a_rejected_citation_is_repaired_into_a_pass_answer(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    asked = new_request(CPU_QUESTION, language="zh")
    sid = invocation_id(asked.run_id, 1, 0)
    model = projection(start=topic_ends(stack))
    reader = AnswerReader(stack.kafka)
    with fake.FakeOpenAI() as server:
        # The plan's query_metrics call runs before the model is asked: it answers at once.
        server.script_for(
            EXECUTOR,
            fake.text(cpu_answer_text(asked.run_id, cited=f'"{sid}"')),
            fake.text(cpu_answer_text(asked.run_id)),
        )
        env = {
            "TRACEBOUND_EXECUTOR_MODE": "llm",
            "TRACEBOUND_LLM_BASE_URL": server.base_url,
            "TRACEBOUND_LLM_MAX_RETRIES": "0",
            "TRACEBOUND_LLM_TIMEOUT_S": "10",
        }
        with running_pipeline(stack, tmp_path / "pipeline", env):
            model.start()
            publish(stack.kafka, [asked])
            answers = reader.wait_for({asked.run_id}, timeout_s=180)
        reader.close()
        repair_request = [r for r in server.requests if EXECUTOR(r.body)][-1]
    answer = answers[asked.run_id]
    assert (answer.verdict, answer.round) == ("PASS", 1), answer.user_facing_answer
    assert repair_request.messages[-1]["content"].startswith("repair:")
    wait_answered(model, [asked.run_id])
    with model.conn() as conn:
        found = trace.build_trace(conn, asked.run_id)
    assert found is not None
    document = found.document()
    executor_steps = [s for s in document["agent_steps"] if s["agent_name"] == "chat_executor"]
    assert [s["repair"] for s in executor_steps] == [False, True]
    assert document["executor"]["parse_status"]["status"] == "repaired"
    [claim] = document["claims"]
    [binding] = claim["bindings"]
    assert (binding["source_invocation_id"], binding["raw_path"]) == (sid, "$.alerts[0]")
    assert binding["gatekeeper"]["status"] == "pass"
