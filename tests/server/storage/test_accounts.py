"""Changing a password and deleting an account: what the store keeps, revokes and holds."""

from __future__ import annotations

from datetime import timedelta

import pytest

from server.storage import (
    CommitQueue,
    Conflict,
    GameFinished,
    NameTaken,
    StillPlaying,
    Store,
    token_digest,
)
from server.storage.repo import DELETED_PREFIX

from .conftest import T0, at
from .test_games import new_game

HOLD = timedelta(days=30)


async def test_a_new_password_revokes_every_token_but_the_one_kept(store: Store) -> None:
    user = await store.create_user("Kim", "human", password_hash="old", now=T0)
    kept, _ = await store.create_token(user.id, "session", "here")
    others = [(await store.create_token(user.id, "session", label))[0]
              for label in ("laptop", "phone")]
    stranger = await store.create_user("Lou", "human")
    theirs, _ = await store.create_token(stranger.id, "session")

    revoked = await store.replace_password(user.id, "new", keep=token_digest(kept), now=at(5))
    assert sorted(revoked) == sorted(token_digest(token) for token in others)
    assert (await store.get_user(user.id)).password_hash == "new"  # type: ignore[union-attr]
    assert await store.user_for_token(kept) is not None
    assert [await store.user_for_token(token) for token in others] == [None, None]
    assert await store.user_for_token(theirs) is not None  # another account's: untouched
    assert await store.replace_password(user.id, "newer", keep=token_digest(kept)) == []


async def test_a_deleted_account_keeps_its_row_under_an_anonymous_name(
        store: Store, writer: CommitQueue) -> None:
    user = await store.create_user("Mia", "human", password_hash="hash", now=T0)
    tokens = [(await store.create_token(user.id, "session"))[0] for _ in range(2)]
    opponent = await store.create_user("Ned", "human", now=T0)
    game_id = await new_game(store, (user, opponent))
    await writer.submit(GameFinished(game_id, 0, "resign", 2, at(3)))

    name, revoked = await store.delete_account(user.id, hold_for=HOLD, now=at(10))
    assert name.startswith(DELETED_PREFIX) and len(name) <= 20
    assert sorted(revoked) == sorted(token_digest(token) for token in tokens)
    assert [await store.user_for_token(token) for token in tokens] == [None, None]
    assert await store.get_user_by_name("Mia") is None  # login and profile find nobody
    assert await store.get_user_by_name(name) is None
    assert await store.get_user(user.id) is None
    record = await store.get_game(game_id)
    assert record is not None and record.info.players == (name, "Ned")
    page = await store.list_games(player=name)
    assert [info.id for info in page.games] == [game_id]
    assert (await store.list_games(player="Mia")).games == ()
    with pytest.raises(Conflict):  # deleted already
        await store.delete_account(user.id, hold_for=HOLD, now=at(11))


async def test_the_former_name_is_held_then_free(store: Store) -> None:
    user = await store.create_user("Ola", "human", now=T0)
    await store.delete_account(user.id, hold_for=HOLD, now=at(0))
    for name in ("Ola", "OLA"):
        with pytest.raises(NameTaken):
            await store.create_user(name, "human", now=at(0) + HOLD - timedelta(seconds=1))
    again = await store.create_user("ola", "human", now=at(0) + HOLD)
    assert again.id != user.id and again.name == "ola"
    # the new owner deletes it in turn: the name is held again, from then
    await store.delete_account(again.id, hold_for=HOLD, now=at(0) + HOLD)
    with pytest.raises(NameTaken):
        await store.create_user("Ola", "human", now=at(0) + HOLD + timedelta(days=1))


async def test_no_hold_frees_the_name_at_once(store: Store) -> None:
    user = await store.create_user("Pam", "human", now=T0)
    await store.delete_account(user.id, hold_for=timedelta(0), now=at(0))
    assert (await store.create_user("Pam", "human", now=at(0))).name == "Pam"


async def test_names_of_deleted_accounts_cannot_be_registered(store: Store) -> None:
    for name in (f"{DELETED_PREFIX}1234abcd", "Deleted-Me"):
        with pytest.raises(NameTaken, match="kept for deleted accounts"):
            await store.create_user(name, "human")
    assert (await store.create_user("deletedx", "human")).name == "deletedx"


async def test_an_account_playing_a_game_is_not_deleted(store: Store,
                                                        writer: CommitQueue) -> None:
    user = await store.create_user("Quin", "human", password_hash="hash", now=T0)
    token, _ = await store.create_token(user.id, "session")
    opponent = await store.create_user("Rex", "human", now=T0)
    game_id = await new_game(store, (opponent, user))
    with pytest.raises(StillPlaying) as info:
        await store.delete_account(user.id, hold_for=HOLD, now=at(1))
    assert info.value.game_id == game_id
    assert await store.get_user_by_name("Quin") == user  # nothing changed
    assert await store.user_for_token(token) is not None
    await writer.submit(GameFinished(game_id, 1, "resign", 2, at(3)))
    name, _ = await store.delete_account(user.id, hold_for=HOLD, now=at(4))
    assert name.startswith(DELETED_PREFIX)
