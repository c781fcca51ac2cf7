"""The worlds and the batches run on them, each made once for the whole isolation module
(``lab``): the tests parametrized per case only look their case up."""

from __future__ import annotations

import os
from typing import Callable

import pytest

from . import corpus, runner, worlds

# The byte cap of resource cases: the default max_result_bytes.
RESOURCE_MAX_RESULT_BYTES = 32 * 1024 * 1024


class Lab:
    def __init__(self, home) -> None:
        self.home = home
        self._worlds: dict[str, worlds.World] = {}
        self._unavailable: dict[str, str] = {}
        self._done: dict[tuple[str, str], object] = {}
        self._closers: list[Callable[[], None]] = []

    def world(self, engine: str) -> worlds.World:
        """The world of ``engine``, built on first use; skips with the reason when the engine
        cannot be reached here."""
        if engine in self._unavailable:
            pytest.skip(self._unavailable[engine])
        if engine not in self._worlds:
            try:
                self._worlds[engine] = worlds.build(engine, self.home / engine, worlds.new_token())
            except worlds.Unavailable as exc:
                self._unavailable[engine] = f"{engine}: {exc}"
                pytest.skip(self._unavailable[engine])
        return self._worlds[engine]

    def once(self, engine: str, what: str, make: Callable[[worlds.World], object]):
        key = (engine, what)
        if key not in self._done:
            self._done[key] = make(self.world(engine))
        return self._done[key]

    # -- the batches --------------------------------------------------------------------------
    def hostile(self, engine: str):
        """(outcomes by id, unexplained changes) of every hostile case through the library."""
        return self.once(engine, "hostile", lambda w: runner.run_batch(w, corpus.hostile(engine), "library"))

    def legit(self, engine: str):
        def make(w):
            if not w.has_chinook:
                return None
            return runner.run_legit(w, corpus.legit(engine)), w.changes()
        done = self.once(engine, "legit", make)
        if done is None:
            pytest.skip(f"the legitimate corpus reads Chinook, absent at {worlds.CHINOOK}")
        return done

    def cli(self, engine: str):
        outcomes, _ = self.hostile(engine)
        cases = corpus.nasty(engine)
        return self.once(engine, "cli", lambda w: runner.run_batch(
            w, cases, "cli", expect={c.id: outcomes[c.id].kind for c in cases}))

    def api(self, engine: str):
        pytest.importorskip("fastapi", reason="the [server] extra is not installed")
        pytest.importorskip("httpx", reason="httpx is needed by FastAPI's TestClient")
        return self.once(engine, "api", lambda w: runner.run_batch(w, corpus.nasty(engine), "api",
                                                                   client=self._client(w)))

    def _client(self, w: worlds.World):
        from fastapi.testclient import TestClient

        from vouchsql.server.app import ServerOptions, create_app
        from vouchsql.settings import load_config

        config = load_config(env={}, cwd=self.home, cache_dir=str(w.cache_dir), timeout=w.timeout,
                             trusted_objects=worlds.TRUST_ALL)
        client = TestClient(create_app(ServerOptions(databases={"w": w.target}, examples={}), config))
        client.__enter__()
        self._closers.append(lambda: client.__exit__(None, None, None))
        return client

    def resources(self, engine: str):
        return self.once(engine, "resources", lambda w: runner.measure(
            w, corpus.resources(engine), timeout=w.timeout, max_result_bytes=RESOURCE_MAX_RESULT_BYTES))

    def close(self) -> None:
        for close in self._closers:
            close()
        for w in self._worlds.values():
            w.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        # Settings come from the tests, never from the caller's environment or folder.
        for name in list(os.environ):
            if name.startswith("VOUCH_"):
                mp.delenv(name)
        home = tmp_path_factory.mktemp("isolation")
        mp.chdir(home)
        made = Lab(home)
        try:
            yield made
        finally:
            made.close()
