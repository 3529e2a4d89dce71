"""Team members, tokens and scope grants in the database (the data layer of team access)."""

from __future__ import annotations

import pytest

from plur.errors import AuthError, NotFoundError, ValidationError


def test_members_tokens_and_grants(pg_uri: str):
    import psycopg

    from plur.store.pg import team

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        ana = team.add_member(conn, "ana")
        bo = team.add_member(conn, "bo")
        team.grant(conn, "ana", "project:site", write=True)
        team.grant(conn, "bo", "project:site")
        team.grant(conn, "bo", "agent:bo-coder", write=True)
        a, b = team.member_for_token(conn, ana), team.member_for_token(conn, bo)
        assert (a.name, b.name) == ("ana", "bo")
        assert team.may_read(a, "project:site") and team.may_write(a, "project:site")
        assert team.may_read(b, "project:site") and not team.may_write(b, "project:site")
        assert not team.may_read(a, "agent:bo-coder") and team.may_read(b, "agent:bo-coder")  # no grant, no read
        assert team.may_read(a, "global") and team.may_write(b, "global")
        assert not team.may_read(a, "project:other")
        assert ana.encode() not in repr(conn.execute("SELECT * FROM plur_members").fetchall()).encode()
        assert team.revoke(conn, "bo", "agent:bo-coder") and not team.revoke(conn, "bo", "agent:bo-coder")
        assert not team.may_read(team.member_for_token(conn, bo), "agent:bo-coder")
        new = team.rotate_token(conn, "ana")
        with pytest.raises(AuthError):
            team.member_for_token(conn, ana)                                  # the old token stops working
        assert team.member_for_token(conn, new).name == "ana"
        with pytest.raises(ValidationError, match="exists"):
            team.add_member(conn, "ana")
        with pytest.raises(ValidationError, match="every member"):
            team.grant(conn, "ana", "global")
        with pytest.raises(NotFoundError):
            team.grant(conn, "cy", "project:site")
        with pytest.raises(ValidationError):
            team.add_member(conn, "two words")
