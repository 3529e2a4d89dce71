"""Two real `plur service` processes (two homes) on one PostgreSQL database: A's writes reach B's answers."""

from __future__ import annotations

import json
import shutil
import time

from plur.service.client import Client
from conftest import wait_for
from test_service import plur, short_home




def _ids(answer: dict) -> list[str]:
    return [h["engram"]["id"] for h in answer["hits"]]


def test_two_services_on_one_database(pg_uri: str) -> None:
    env = {"PLUR_STORE": pg_uri, "PLUR_MODEL": "none"}  # BM25: this test is about propagation, not the model
    homes = [short_home(), short_home()]
    infos = []
    try:
        for home in homes:
            started = plur("service", "start", "--port", "0", home=home, env=env)
            assert started.returncode == 0, started.stderr + started.stdout
            infos.append(json.loads((home / "service.json").read_text()))
        a, b = Client(infos[0]), Client(infos[1])
        b.recall("warm up", mode="bm25")
        t0 = time.perf_counter()
        e = a.learn("The coffee machine on floor three is descaled on Fridays.")["engram"]
        wait_for(lambda: e["id"] in _ids(b.recall("coffee machine descaled", mode="bm25")), "B to recall A's learn")
        print(f"\nservice A learn -> service B recall: {(time.perf_counter() - t0) * 1000:.0f} ms")
        assert not (homes[0] / "engrams").exists() and not (homes[1] / "engrams").exists()
        a.forget(e["id"])
        wait_for(lambda: e["id"] not in _ids(b.recall("coffee machine descaled", mode="bm25")), "B to drop it")
    finally:
        for home in homes:
            plur("service", "stop", home=home)
            shutil.rmtree(home.parent, ignore_errors=True)
