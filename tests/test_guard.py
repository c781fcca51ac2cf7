"""``vouchsql.guard``: vouchsql.check in front of SQL another system wrote — a plain function,
LangChain's SQL database tool and Vanna 2's ``run_sql`` (``SqlRunner``), each through the
library's public interface. The libraries are real (installed from the registry with
``pip install langchain-community vanna``); each test skips where its library is absent.
"""

from __future__ import annotations

import asyncio
import shutil
import warnings
from pathlib import Path

import pytest

from conftest import DATASETS
from vouchsql.guard import Guard, Withheld, summary

GOOD_Q = "How many orders are there?"
GOOD_SQL = "SELECT COUNT(*) AS orders FROM orders"
TIE_Q = "Which product has the highest price?"
TIE_SQL = "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"
BAD_Q = "How many orders match a product?"
BAD_SQL = "SELECT COUNT(*) FROM orders o JOIN products p ON p.price = o.total"


@pytest.fixture(scope="module")
def shop(demo_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("guard") / "shop.sqlite"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture(scope="module")
def guard(shop, tmp_path_factory):
    return Guard(shop, settings={"cache_dir": str(tmp_path_factory.mktemp("guard_cache"))})


# -- a plain function ----------------------------------------------------------------------------

def test_plain_function_passes_agreeing_sql(guard):
    answer = guard.wrap(lambda question: GOOD_SQL, k=3)(GOOD_Q)
    assert answer.verdict.gate == "pass" and answer.shown.result.rows == [[3867]]


def test_plain_function_vetoed_sql_is_withheld(guard):
    with pytest.raises(Withheld) as caught:
        guard.wrap(lambda question: BAD_SQL)(BAD_Q)
    assert caught.value.kind == "withheld" and "bad_join" in caught.value.answer.verdict.reasons
    assert "barely overlap" in str(caught.value)


def test_a_flag_passes_with_its_open_choice_to_show(guard):
    answer = guard.require(TIE_Q, TIE_SQL)
    assert answer.verdict.gate == "flag"
    assert "open choice (ties)" in summary(answer)


def test_a_strict_guard_blocks_flag_too(shop, guard):
    strict = Guard(shop, block=("abstain", "flag"), settings=guard.settings)
    with pytest.raises(Withheld):
        strict.require(TIE_Q, TIE_SQL)
    with pytest.raises(Exception, match="unknown gate"):
        Guard(shop, block=("veto",))


def test_a_write_is_withheld_and_never_run(guard, shop, file_digest):
    before = file_digest(shop)
    with pytest.raises(Withheld, match="not allowed"):
        guard.require(GOOD_Q, "DELETE FROM orders")
    assert file_digest(shop) == before


# -- recorded definitions: a Cortex model's verified queries -------------------------------------

SINGER_MODEL = Path(__file__).parent / "fixtures" / "semantic" / "cortex" / "singer.yaml"
SINGER_Q = "How many singers are there?"
SINGER_WRONG = "SELECT COUNT(*) FROM singer WHERE Citizenship = 'France'"  # not the verified count


@pytest.fixture
def singer(tmp_path):
    pytest.importorskip("yaml", reason="semantic models are YAML")
    source = DATASETS / "spider" / "singer.sqlite"
    if not source.exists():
        pytest.skip(f"{source} is absent (../shared/datasets)")
    shutil.copy(source, tmp_path / "singer.sqlite")
    return tmp_path / "singer.sqlite"


@pytest.mark.parametrize("how", ["keyword", "keyword, open database", "settings, open database", "dict"])
def test_a_guard_with_definitions_withholds_a_wrong_answer_to_a_verified_question(singer, tmp_path, how):
    from vouchsql.db import connect

    settings = {"cache_dir": str(tmp_path / "cache")}
    model: object = str(SINGER_MODEL)  # a Cortex semantic model
    if how == "dict":  # Vouch's own form, as vouchsql.ask takes it too
        model = {"verified_queries": [{"name": "singer_count", "question": SINGER_Q,
                                       "sql": "SELECT COUNT(*) FROM singer"}]}
    with connect(singer, **settings) as db:
        if how == "keyword":
            guard = Guard(singer, settings=settings, definitions=model)
        elif how == "settings, open database":
            guard = Guard(db, settings={"definitions": str(SINGER_MODEL)})
        else:
            guard = Guard(db, definitions=model)
        with pytest.raises(Withheld) as caught:
            guard.require(SINGER_Q, SINGER_WRONG)
        fired = next(c for c in caught.value.answer.checks if c.name == "verified_query")
        assert fired.fired and fired.evidence["name"] == "singer_count"
        assert "singer_count" in str(caught.value)
        answer = guard.require(SINGER_Q, "SELECT COUNT(*) FROM singer")  # the verified rows pass the guard
        assert not next(c for c in answer.checks if c.name == "verified_query").fired
        # and without the model the same SQL is not withheld: the definitions did it
        assert Guard(db).require(SINGER_Q, SINGER_WRONG).verdict.gate != "abstain"


def test_a_guard_refuses_a_definitions_file_it_cannot_read(singer, tmp_path):
    from vouchsql.errors import UserInputError

    with pytest.raises(UserInputError, match="no definitions file"):
        Guard(singer, definitions=tmp_path / "missing.yaml")


# -- LangChain: QuerySQLDatabaseTool ---------------------------------------------------------------

@pytest.fixture(scope="module")
def langchain_sql_tool(shop):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-community announces its sunset on import
        sql_tool = pytest.importorskip("langchain_community.tools.sql_database.tool")
        utilities = pytest.importorskip("langchain_community.utilities")
    db = utilities.SQLDatabase.from_uri(f"sqlite:///{shop}")
    return sql_tool.QuerySQLDatabaseTool(db=db)


def test_langchain_tool_runs_a_checked_query(guard, langchain_sql_tool):
    from vouchsql.guard import langchain_tool

    tool = langchain_tool(guard, langchain_sql_tool, GOOD_Q)
    assert tool.name == "sql_db_query" and "Vouch" in tool.description
    out = tool.invoke({"query": GOOD_SQL})
    assert out.startswith("[(3867,)]") and "Vouch: flag" in out  # one query: agreement unmeasured


def test_langchain_tool_does_not_run_a_vetoed_query(guard, langchain_sql_tool, shop, file_digest):
    from vouchsql.guard import langchain_tool

    tool = langchain_tool(guard, langchain_sql_tool, BAD_Q)
    out = tool.invoke({"query": BAD_SQL})
    assert out.startswith("Not run.") and "Vouch: abstain" in out and "barely overlap" in out
    before = file_digest(shop)
    out = langchain_tool(guard, langchain_sql_tool, GOOD_Q).invoke({"query": "DROP TABLE orders"})
    assert out.startswith("Not run.") and file_digest(shop) == before


# -- Vanna 2: SqlRunner.run_sql(args, context) ------------------------------------------------------

@pytest.fixture(scope="module")
def vanna_parts(shop):
    pytest.importorskip("vanna")
    from vanna.capabilities.sql_runner import RunSqlToolArgs
    from vanna.core.tool import ToolContext
    from vanna.core.user import User
    from vanna.integrations.local.agent_memory.in_memory import DemoAgentMemory
    from vanna.integrations.sqlite import SqliteRunner

    def context(question: str):
        return ToolContext(user=User(id="u1"), conversation_id="c1", request_id="r1",
                           agent_memory=DemoAgentMemory(), metadata={"question": question})

    return SqliteRunner(str(shop)), RunSqlToolArgs, context


def test_vanna_runner_runs_a_checked_query(guard, vanna_parts):
    from vouchsql.guard import vanna_runner

    inner, Args, context = vanna_parts
    runner = vanna_runner(guard, inner)
    ctx = context(GOOD_Q)
    df = asyncio.run(runner.run_sql(Args(sql=GOOD_SQL), ctx))
    assert df.iloc[0, 0] == 3867
    assert ctx.metadata["vouch"]["verdict"]["gate"] == "flag"


def test_vanna_runner_withholds_a_vetoed_query(guard, vanna_parts):
    from vouchsql.guard import vanna_runner

    inner, Args, context = vanna_parts
    ctx = context(BAD_Q)
    with pytest.raises(Withheld):
        asyncio.run(vanna_runner(guard, inner).run_sql(Args(sql=BAD_SQL), ctx))
    assert "bad_join" in ctx.metadata["vouch"]["verdict"]["reasons"]


def test_vanna_runner_inside_vannas_run_sql_tool(guard, vanna_parts, tmp_path, monkeypatch):
    """Through Vanna's own RunSqlTool: a withheld query comes back as the tool's error result."""
    from vanna.tools import RunSqlTool

    from vouchsql.guard import vanna_runner

    monkeypatch.chdir(tmp_path)  # RunSqlTool may save results as files in the working folder
    inner, Args, context = vanna_parts
    tool = RunSqlTool(sql_runner=vanna_runner(guard, inner))
    ok = asyncio.run(tool.execute(context(GOOD_Q), Args(sql=GOOD_SQL)))
    bad = asyncio.run(tool.execute(context(BAD_Q), Args(sql=BAD_SQL)))
    assert ok.success is True and "3867" in ok.result_for_llm
    assert bad.success is False and "withheld" in (bad.error or bad.result_for_llm)


# -- LlamaIndex: NLSQLTableQueryEngine -----------------------------------------------------------

@pytest.fixture(scope="module")
def llama_parts(shop):
    pytest.importorskip("llama_index.core")
    from llama_index.core import MockEmbedding, SQLDatabase
    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms import CustomLLM
    from llama_index.core.query_engine import NLSQLTableQueryEngine
    from sqlalchemy import create_engine

    class ScriptedSQL(CustomLLM):
        """A function-backed LLM: the SQL it 'writes' for each question, in LlamaIndex's
        text-to-SQL reply format (no model is reached)."""

        script: dict = {}

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
            question = next(q for q in self.script if q in prompt)
            return CompletionResponse(text=f"SQLQuery: {self.script[question]}\nSQLResult: ")

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
            yield self.complete(prompt)

    def engine(database):
        llm = ScriptedSQL(script={GOOD_Q: GOOD_SQL, BAD_Q: BAD_SQL})
        # an embedding model is resolved even where none is used: a local mock, never OpenAI's
        return NLSQLTableQueryEngine(sql_database=database, tables=["orders", "products"], llm=llm,
                                     synthesize_response=False, embed_model=MockEmbedding(embed_dim=8))

    return SQLDatabase(create_engine(f"sqlite:///{shop}")), engine


def test_llamaindex_engine_runs_a_checked_query(guard, llama_parts):
    from vouchsql.guard import llamaindex_query_engine, llamaindex_sql_database

    database, engine = llama_parts
    response = llamaindex_query_engine(guard, engine(llamaindex_sql_database(guard, database))).query(GOOD_Q)
    assert "3867" in str(response) and response.metadata["sql_query"] == GOOD_SQL
    (answer,) = response.metadata["vouch"]
    assert answer["shown"]["sql"] == GOOD_SQL and answer["verdict"]["gate"] in ("pass", "flag")


def test_llamaindex_engine_withholds_a_vetoed_query_without_running_it(guard, llama_parts, shop, file_digest):
    from vouchsql.guard import llamaindex_query_engine, llamaindex_sql_database

    database, engine = llama_parts
    ran = []
    original = type(database).run_sql
    type(database).run_sql = lambda self, command, *a, **k: ran.append(command) or original(self, command, *a, **k)
    try:
        before = file_digest(shop)
        response = llamaindex_query_engine(guard, engine(llamaindex_sql_database(guard, database))).query(BAD_Q)
    finally:
        type(database).run_sql = original
    assert ran == [] and file_digest(shop) == before
    assert str(response).startswith("Error: Vouch withheld this answer (gate abstain")
    (answer,) = response.metadata["vouch"]
    assert answer["verdict"]["gate"] == "abstain" and "bad_join" in answer["verdict"]["reasons"]
    assert "bad_join" in response.metadata["vouch_summary"] or "barely overlap" in response.metadata["vouch_summary"]


def test_a_guarded_llamaindex_database_refuses_sql_outside_the_engine(guard, llama_parts):
    from vouchsql.errors import UserInputError
    from vouchsql.guard import llamaindex_sql_database

    database, _ = llama_parts
    with pytest.raises(UserInputError, match="llamaindex_query_engine"):
        llamaindex_sql_database(guard, database).run_sql(GOOD_SQL)
