"""`tools/up.sh --db`: PostgreSQL 15 on the internal network only, its URL passed to both replicas."""

from __future__ import annotations

from tests.deploy._docker import PREFIX, docker, inspect, running_stack

PORT = 8643
STACK = f"{PREFIX}-db"


def test_up_with_a_database_reachable_from_both_replicas_only(images):
    with running_stack(STACK, PORT, "--db"):
        urls = set()
        for n in (1, 2):
            env = dict(e.split("=", 1) for e in inspect(f"{STACK}-app{n}")["Config"]["Env"])
            urls.add(env["CONTEXT_LENS_DB"])
            # the replica reaches the database by its name on the internal network
            docker("exec", f"{STACK}-app{n}", "python", "-c",
                   "import socket; socket.create_connection(('db', 5432), 5).close()")  # fmt: skip
        (url,) = urls
        assert url.startswith("postgresql+psycopg://context_lens:") and url.endswith("@db:5432/context_lens")
        # the password in the URL opens the database over TCP (scram-sha-256), as the replicas will
        libpq = url.replace("postgresql+psycopg://", "postgresql://").replace("@db:", "@127.0.0.1:")
        assert docker("exec", f"{STACK}-db", "psql", libpq, "-tAc", "select 1") == "1"
        # UTF-8: a SQL_ASCII cluster hands psycopg bytes, and SQLAlchemy cannot even read the server's version
        assert docker("exec", f"{STACK}-db", "psql", libpq, "-tAc", "show server_encoding") == "UTF8"
        # on the internal network only: no port published, no other network
        db = inspect(f"{STACK}-db")
        assert not db["HostConfig"]["PortBindings"]
        assert list(db["NetworkSettings"]["Networks"]) == [f"{STACK}-back"]
        assert docker("network", "inspect", "-f", "{{.Internal}}", f"{STACK}-back") == "true"
